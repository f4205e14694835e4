import pytest
import torch

from tests.problems.helpers import assert_differs
from tests.problems.ulysses_gather import assert_concatenates_every_shard_in_rank_order
from tests.world import run_reference

M, N = 24, 40


@pytest.mark.parametrize("seed", [2, 29])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_concatenates_every_shard_in_rank_order(W, seed):
    runs = run_reference(34, W, M=M, N=N, seed=seed)
    for run in runs:
        assert run.inputs[1] is None
    xs, expected = assert_concatenates_every_shard_in_rank_order(34, runs, W)
    if W > 1:
        assert_differs(34, expected, torch.cat(xs[::-1]), W, "reversed rank order")
