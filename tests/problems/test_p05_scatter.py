import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

M, N = 32, 48


@pytest.mark.parametrize("seed", [8, 19])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_rank_r_gets_slice_r_of_the_source(W, seed):
    runs = run_reference(5, W, M=M, N=N, seed=seed)
    source = runs[0].inputs[0]
    assert source.shape == (W, M, N)
    for rank, run in enumerate(runs):
        assert len(run.inputs) == 1, "src must not be passed"
        if rank > 0:
            assert run.inputs[0].shape == (M, N) and not run.inputs[0].any(), "non-source input is (M, N) zeros"
        expected = source[rank]  # independent: slice r of the source tensor
        assert torch.equal(run.output, expected), f"rank {rank}: not an exact copy"
        assert_close(5, run.output, expected, W, f"rank {rank}")
        assert_differs(5, run.output, torch.zeros_like(expected), W, f"rank {rank} zeros (or its input unchanged)")
        assert_differs(5, run.output, torch.full_like(expected, rank + 1), W, f"rank {rank} PKB's constant r + 1")
    assert_differs(5, runs[0].output, source, W, "source returns its input unchanged")
    if W > 1:
        assert_differs(5, runs[1].output, source[0], W, "rank 1 gets slice 0")
