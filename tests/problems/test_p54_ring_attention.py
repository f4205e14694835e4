import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

PID = 54


def causal_attention(q, k, v):
    """Plain causal softmax attention over the whole sequence, float64, (B, S, H, D) layout."""
    q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))  # (B, H, S, D)
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    S = q.shape[2]
    scores = scores.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
    return (scores.softmax(-1) @ v).transpose(1, 2)


@pytest.mark.parametrize("W", [1, 2, 4, 8])
@pytest.mark.parametrize("seed", [1, 2])
def test_reference_matches_global_causal_attention(W, seed):
    if W == 8 and seed == 2:
        pytest.skip("one W = 8 world is enough")
    M, N = (128, 256) if seed == 1 else (64, 512)  # B = 2, T = 4 (S_local = 1 at W >= 4) or B = 1, T = 8
    runs = run_reference(PID, W, M=M, N=N, seed=seed)
    assert runs[0].inputs[3:] == (None, True, None)
    S = runs[0].inputs[0].shape[1]
    assert S == max(1, max(1, N // 64) // W)
    q, k, v = (torch.cat([run.inputs[i] for run in runs], dim=1) for i in range(3))
    full = causal_attention(q, k, v)
    for rank, run in enumerate(runs):
        block = slice(rank * S, (rank + 1) * S)
        assert_close(PID, full[:, block].to(torch.bfloat16), run.output, W, f"rank {rank}")
        assert_differs(PID, run.output, torch.zeros_like(run.output), W, "zeros")
        assert_differs(PID, run.output, run.inputs[0], W, "q unchanged")
        local = causal_attention(*run.inputs[:3]).to(torch.bfloat16)
        if rank > 0:  # rank 0 needs no remote block; every other rank does
            assert_differs(PID, run.output, local, W, f"no communication, rank {rank}")
