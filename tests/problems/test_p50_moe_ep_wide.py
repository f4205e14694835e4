import pytest

from tests.problems.moe_ep_oracle import assert_matches_token_by_token_moe
from tests.world import run_reference

PID = 50


def owner(rank, e, W):
    """Expert e lives on rank e // 2."""
    return e // 2


@pytest.mark.parametrize("W", [1, 2, 4])
@pytest.mark.parametrize("seed", [1, 2])
def test_reference_matches_token_by_token_moe(W, seed):
    runs = run_reference(PID, W, M=64, N=64, seed=seed)
    assert_matches_token_by_token_moe(PID, runs, W, owner)
