import pytest
import torch

from tests.problems.ulysses_gather import assert_concatenates_every_shard_in_rank_order
from tests.world import run_reference, run_world

M, N = 24, 40


@pytest.mark.parametrize("seed", [3, 31])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_concatenates_every_shard_in_rank_order(W, seed):
    runs = run_reference(35, W, M=M, N=N, seed=seed)
    for run in runs:
        assert run.inputs[1:] == (0, None)
    assert_concatenates_every_shard_in_rank_order(35, runs, W)


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
