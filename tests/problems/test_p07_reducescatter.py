import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

M, N = 40, 64


@pytest.mark.parametrize("seed", [2, 9])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_matches_row_blocks_of_global_sum(W, seed):
    runs = run_reference(7, W, M=M, N=N, seed=seed)
    # Independent: sum the full inputs in float64 (exact for these integers), then cut rank r's row block.
    total = sum(run.inputs[0].double() for run in runs)
    for rank, run in enumerate(runs):
        assert run.inputs[0].shape == (W * M, N)
        expected = total[rank * M : (rank + 1) * M].to(torch.bfloat16)
        assert torch.equal(run.output, expected), f"rank {rank}: not exact"
        assert_close(7, run.output, expected, W, f"rank {rank}")
        assert_differs(7, run.output, torch.zeros_like(run.output), W, f"rank {rank} zeros")
        if W > 1:  # at W = 1 a reduce-scatter is the identity
            assert_differs(7, run.output, run.inputs[0], W, f"rank {rank} input unchanged")
            own_block = run.inputs[0][rank * M : (rank + 1) * M]
            assert_differs(7, run.output, own_block, W, f"rank {rank} no communication")
            wrong_block = total[((rank + 1) % W) * M : ((rank + 1) % W + 1) * M].to(torch.bfloat16)
            assert_differs(7, run.output, wrong_block, W, f"rank {rank} another rank's block")
