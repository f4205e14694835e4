import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

PID = 64


def sample(seeds, fanouts, ptr, column_of):
    """Plain-Python first-k expansion; column_of(v) is the list of v's in-neighbors."""
    nodes = list(seeds)
    where = {v: i for i, v in enumerate(nodes)}
    frontier = list(seeds)
    row, col, edge = [], [], []
    for k in fanouts:
        if not frontier:
            break
        out = []
        for v in frontier:
            neighbors = column_of(v)
            t = len(neighbors) if k < 0 else min(k, len(neighbors))
            out += [(u, v, ptr[v] + j) for j, u in enumerate(neighbors[:t])]
        if not out:
            break
        fresh = []
        for u, _, _ in out:
            if u not in where:
                where[u] = len(nodes)
                nodes.append(u)
                fresh.append(u)
        frontier = fresh
        row += [where[u] for u, _, _ in out]
        col += [where[v] for _, v, _ in out]
        edge += [e for _, _, e in out]
    return tuple(torch.tensor(x, dtype=torch.long) for x in (nodes, row, col, edge))


@pytest.mark.parametrize("W, seed", [(1, 1), (2, 2), (4, 3), (3, 4)])
def test_reference_matches_plain_expansion(W, seed):
    runs = run_reference(PID, W, M=256, N=256, seed=seed)
    ptr = runs[0].inputs[2].tolist()
    owner_of = runs[0].inputs[4].tolist()
    assert runs[0].inputs[1] == [10, 5] and (len(ptr) - 1) % W == 0 and len(ptr) - 1 >= 10000
    columns = [run.inputs[3].tolist() for run in runs]

    def true_column(v):
        return columns[owner_of[v]][ptr[v] : ptr[v + 1]]

    for r, run in enumerate(runs):
        seeds, fanouts = run.inputs[0].tolist(), run.inputs[1]
        expected = sample(seeds, fanouts, ptr, true_column)
        assert len(expected[1]) > 512 * 10  # the second hop is not empty
        assert_close(PID, run.output, expected, W, f"rank {r}")
        assert_differs(PID, run.output, tuple(torch.zeros_like(t) for t in expected), W, "zeros")
        if W > 1:
            local = sample(seeds, fanouts, ptr, lambda v, r=r: columns[r][ptr[v] : ptr[v + 1]])
            assert_differs(PID, run.output, local, W, "no communication (local copy of the graph)")
