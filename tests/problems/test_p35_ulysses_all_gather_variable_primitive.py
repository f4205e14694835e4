import pytest
import torch

from evaluator.world import run_reference, run_world
from tests.problems.helpers import assert_close, assert_differs

M, N = 24, 40


@pytest.mark.parametrize("seed", [3, 31])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_concatenates_every_shard_in_rank_order(W, seed):
    runs = run_reference(35, W, M=M, N=N, seed=seed)
    xs = [run.inputs[0] for run in runs]
    expected = torch.cat(xs, dim=0)  # independent: the global tensor, rank blocks stacked along dim 0
    for rank, run in enumerate(runs):
        assert run.inputs[1:] == (0, None)
        assert torch.equal(run.output, expected), f"rank {rank}: not an exact copy"
        assert_close(35, expected, run.output, W, f"rank {rank}")
        assert_differs(35, expected, torch.zeros_like(expected), W, f"rank {rank} zeros")
        if W > 1:
            assert_differs(35, expected, xs[rank].repeat(W, 1), W, f"rank {rank} own shard replicated")
            assert_differs(35, expected, xs[rank], W, f"rank {rank} input unchanged")


def _unequal_shards(rank, W):
    from problems.p35_ulysses_all_gather_variable_primitive import solution

    # Shard lengths differ along the gather dim (dim 1 here); the other dims agree.
    x = torch.arange(3 * (rank + 2), dtype=torch.float32).reshape(3, rank + 2).to(torch.bfloat16) + 100 * rank
    return x, solution(x, 1)


@pytest.mark.parametrize("W", [2, 4])
def test_reference_supports_unequal_lengths_along_gather_dim(W):
    results = run_world(_unequal_shards, W)
    expected = torch.cat([x for x, _ in results], dim=1)
    for rank, (_, out) in enumerate(results):
        assert torch.equal(out, expected), f"rank {rank}"
