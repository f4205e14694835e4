import pytest

from tests.problems.test_p41_zero1_optimizer_shard import check_zero_problem


@pytest.mark.parametrize("seed", [16, 47])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_matches_independent_step(W, seed):
    # Same independent ZeRO step as problem 41: a reduce-scatter and an all-reduce give the same shards.
    check_zero_problem(42, W, seed)


def test_world_size_rule():
    import problems

    assert [W for W in range(1, 13) if problems.get(42).allows_world_size(W)] == [1, 2, 4, 5, 7, 8, 10, 11]
