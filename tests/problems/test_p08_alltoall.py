import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

M, N = 24, 40


@pytest.mark.parametrize("seed", [4, 13])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_is_block_transpose(W, seed):
    runs = run_reference(8, W, M=M, N=N, seed=seed)
    # Independent: stack every rank's input as [source, destination, M, N]; rank r receives column r.
    everything = torch.stack([run.inputs[0] for run in runs])
    for rank, run in enumerate(runs):
        assert run.inputs[0].shape == (W, M, N)
        expected = everything[:, rank]
        assert torch.equal(run.output, expected), f"rank {rank}: not an exact copy"
        assert_close(8, run.output, expected, W, f"rank {rank}")
        assert_differs(8, run.output, torch.zeros_like(run.output), W, f"rank {rank} zeros")
        if W > 1:
            assert_differs(8, run.output, run.inputs[0], W, f"rank {rank} input unchanged (no communication)")
            assert_differs(8, run.output, everything[rank], W, f"rank {rank} row instead of column")
