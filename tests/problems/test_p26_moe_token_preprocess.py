import pytest
import torch

import problems
from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


def counts_of(mask):
    """Tokens each expert receives from one rank, counted pair by pair from the routing mask."""
    E, K, M = mask.shape
    counts = [0] * E
    for e in range(E):
        for k in range(K):
            counts[e] += int(sum(1 for t in range(M) if mask[e, k, t] == 1))
    return counts


def test_world_size_rule():
    rule = problems.get(26).allows_world_size
    assert [W for W in range(1, 10) if rule(W)] == [1, 2, 4, 8]


@pytest.mark.parametrize("W,seed", [(1, 0), (2, 0), (4, 0), (4, 21), (8, 21)])
def test_reference_matches_counted_splits(W, seed):
    M = 64
    runs = run_reference(26, W, M=M, N=32, seed=seed)
    L = 8 // W
    counts = [counts_of(run.inputs[0]) for run in runs]
    for rank, run in enumerate(runs):
        mask, E, group = run.inputs
        assert mask.shape == (8, 2, M) and mask.dtype == torch.float32 and (E, group) == (8, None)
        assert mask.sum() == 2 * M and mask.stride() == (1, 8, 16)  # the reversed one-hot view, as in PKB
        input_splits = [sum(counts[rank][j * L : (j + 1) * L]) for j in range(W)]
        table = [[counts[src][rank * L + e] for e in range(L)] for src in range(W)]
        expected = (
            torch.tensor(input_splits),
            torch.tensor([sum(row) for row in table]),
            torch.tensor(table, dtype=torch.float32),
            torch.tensor(table, dtype=torch.float32).sum(0),
        )
        assert all(t.device.type == "cpu" for t in run.output)
        assert_close(26, run.output, expected, W, f"rank {rank}")
        assert_differs(26, run.output, tuple(torch.zeros_like(t) for t in expected), W, "zeros")
        off_by_one = expected[2].clone()
        off_by_one[0, 0] += 1
        assert_differs(26, run.output, expected[:2] + (off_by_one, expected[3]), W, "a count off by one")
        if W > 1:  # without the all-gather a rank only sees its own counts, as if every rank routed like it
            mine = [[counts[rank][rank * L + e] for e in range(L)] for _ in range(W)]
            local = (
                expected[0],
                torch.tensor([sum(r) for r in mine]),
                torch.tensor(mine, dtype=torch.float32),
                torch.tensor(mine, dtype=torch.float32).sum(0),
            )
            assert_differs(26, run.output, local, W, "no communication")
