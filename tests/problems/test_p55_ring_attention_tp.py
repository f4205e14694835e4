import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.problems.ring_attention_oracle import assert_attention_arguments, attention_block
from tests.world import run_reference

PID = 55


@pytest.mark.parametrize("W", [1, 2, 4])
@pytest.mark.parametrize("seed", [1, 2])
def test_reference_matches_full_attention_block(W, seed):
    tp, cp = min(2, W), W // min(2, W)
    M, N = (128, 256) if seed == 1 else (64, 512)
    runs = run_reference(PID, W, M=M, N=N, seed=seed)
    assert_attention_arguments(runs, W, inner=tp)  # TP groups of consecutive ranks, CP groups strided by tp
    # The global sequence: CP blocks in order (taken from TP rank 0 of each block; TP partners hold the same).
    x = torch.cat([runs[c * tp].inputs[0] for c in range(cp)], dim=1)
    S = runs[0].inputs[0].shape[1]
    full = sum(attention_block(x, runs[t].inputs[1], runs[t].inputs[2], 8 // tp) for t in range(tp))
    for rank, run in enumerate(runs):
        c = rank // tp
        assert torch.equal(run.inputs[0], x[:, c * S : (c + 1) * S])
        expected = full[:, c * S : (c + 1) * S].to(torch.bfloat16)
        assert_close(PID, expected, run.output, W, f"rank {rank}")
        assert_differs(PID, run.output, torch.zeros_like(run.output), W, "zeros")
        assert_differs(PID, run.output, run.inputs[0], W, "inputs unchanged")
        x_local = run.inputs[0]
        own = attention_block(x_local, run.inputs[1], run.inputs[2], 8 // tp)  # no ring, no TP sum
        if W > 1 and (tp > 1 or c > 0):
            assert_differs(PID, run.output, own.to(torch.bfloat16), W, f"no communication, rank {rank}")
        if tp > 1:
            ringed = attention_block(x, run.inputs[1], run.inputs[2], 8 // tp)
            partial = ringed[:, c * S : (c + 1) * S].to(torch.bfloat16)
            assert_differs(PID, run.output, partial, W, f"no TP all-reduce, rank {rank}")
