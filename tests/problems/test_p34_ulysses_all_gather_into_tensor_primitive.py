import pytest
import torch

from evaluator.world import run_reference
from tests.problems.helpers import assert_close, assert_differs

M, N = 24, 40


@pytest.mark.parametrize("seed", [2, 29])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_concatenates_every_shard_in_rank_order(W, seed):
    runs = run_reference(34, W, M=M, N=N, seed=seed)
    xs = [run.inputs[0] for run in runs]
    expected = torch.cat(xs, dim=0)  # independent: the global tensor, rank blocks stacked along dim 0
    for rank, run in enumerate(runs):
        assert run.inputs[1] is None
        assert torch.equal(run.output, expected), f"rank {rank}: not an exact copy"
        assert_close(34, expected, run.output, W, f"rank {rank}")
        assert_differs(34, expected, torch.zeros_like(expected), W, f"rank {rank} zeros")
        if W > 1:
            assert_differs(34, expected, xs[rank].repeat(W, 1), W, f"rank {rank} own shard replicated")
            assert_differs(34, expected, xs[rank], W, f"rank {rank} input unchanged")
            assert_differs(34, expected, torch.cat(xs[::-1]), W, f"rank {rank} reversed rank order")
