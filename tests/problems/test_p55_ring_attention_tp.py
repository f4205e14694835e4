import pytest
import torch

from evaluator.world import GroupRef, run_reference
from tests.problems.helpers import assert_close, assert_differs

PID = 55


def attention_heads(x, w_qkv, heads):
    """Causal attention of the whole sequence x (B, S, 512) for the heads in w_qkv, float64: (B, S, heads*64)."""
    B, S, _ = x.shape
    qkv = (x.double() @ w_qkv.double().T).view(B, S, 3, heads, 64).permute(2, 0, 3, 1, 4)  # (3, B, H, S, 64)
    scores = qkv[0] @ qkv[1].transpose(-1, -2) / 8.0
    scores = scores.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
    return (scores.softmax(-1) @ qkv[2]).transpose(1, 2).reshape(B, S, heads * 64)


@pytest.mark.parametrize("W", [1, 2, 4])
@pytest.mark.parametrize("seed", [1, 2])
def test_reference_matches_full_attention_block(W, seed):
    tp, cp = min(2, W), W // min(2, W)
    M, N = (128, 256) if seed == 1 else (64, 512)
    runs = run_reference(PID, W, M=M, N=N, seed=seed)
    for rank, run in enumerate(runs):
        t, c = rank % tp, rank // tp
        assert run.inputs[3:6] == (8, None, True)
        assert run.inputs[6] == GroupRef(tuple(range(c * tp, (c + 1) * tp)))
        assert run.inputs[7] == GroupRef(tuple(range(t, W, tp)))
    # The global sequence: CP blocks in order (taken from TP rank 0 of each block; TP partners hold the same).
    x = torch.cat([runs[c * tp].inputs[0] for c in range(cp)], dim=1)
    S = runs[0].inputs[0].shape[1]
    full = sum(attention_heads(x, runs[t].inputs[1], 8 // tp) @ runs[t].inputs[2].double().T for t in range(tp))
    for rank, run in enumerate(runs):
        t, c = rank % tp, rank // tp
        assert torch.equal(run.inputs[0], x[:, c * S:(c + 1) * S])
        expected = full[:, c * S:(c + 1) * S].to(torch.bfloat16)
        assert_close(PID, expected, run.output, W, f"rank {rank}")
        assert_differs(PID, run.output, torch.zeros_like(run.output), W, "zeros")
        assert_differs(PID, run.output, run.inputs[0], W, "inputs unchanged")
        x_local = run.inputs[0]
        own = attention_heads(x_local, run.inputs[1], 8 // tp) @ run.inputs[2].double().T  # no ring, no TP sum
        if W > 1 and (tp > 1 or c > 0):
            assert_differs(PID, run.output, own.to(torch.bfloat16), W, f"no communication, rank {rank}")
        if tp > 1:
            ringed = attention_heads(x, run.inputs[1], 8 // tp) @ run.inputs[2].double().T
            partial = ringed[:, c * S:(c + 1) * S].to(torch.bfloat16)
            assert_differs(PID, run.output, partial, W, f"no TP all-reduce, rank {rank}")
