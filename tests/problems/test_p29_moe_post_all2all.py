import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


def ungroup(rows, counts):
    """Chunks are stored local-expert-major (e, i) with count[i, e] rows; emit them source-major (i, e)."""
    W, L = counts.shape
    starts, offset = {}, 0
    for e in range(L):
        for i in range(W):
            starts[i, e] = (offset, offset + int(counts[i, e]))
            offset += int(counts[i, e])
    return torch.cat([rows[slice(*starts[i, e])] for i in range(W) for e in range(L)])


def combine(received, weights, selected, routing_map, M):
    """Token t gets, for each routed pair p (expert-major order), weight(t, expert) * row p; in float64."""
    out = torch.zeros(M, received.shape[1], dtype=torch.float64)
    p = 0
    for e in range(routing_map.shape[0]):
        for t in range(M):
            if routing_map[e, t]:
                k = int((selected[t] == e).nonzero()[0])
                out[t] += float(weights[t, k]) * received[p].double()
                p += 1
    return out.to(received.dtype)


@pytest.mark.parametrize("W,seed", [(1, 0), (2, 0), (2, 40), (4, 40), (8, 0)])
def test_reference_matches_loop_combine(W, seed):
    M, N = 32, 16
    runs = run_reference(29, W, M=M, N=N, seed=seed)
    c = 2 * M // W
    reordered = []
    for run in runs:
        (outputs, weights, selected, E, send, recv, counts, routing_map, perm, shape, group) = run.inputs
        assert (E, tuple(shape), group) == (8, (M, N), None) and send == recv == [c] * W
        assert routing_map.dtype == torch.bool and (routing_map.sum(0) == 2).all()
        assert (selected[:, 0] < selected[:, 1]).all() and torch.equal(routing_map.nonzero()[:, 1], perm)
        assert torch.allclose(weights.float().sum(1), torch.ones(M), atol=1e-2) and (weights > 0).all()
        assert torch.equal(counts, runs[0].inputs[6]) and (counts.sum(1) == c).all()
        reordered.append(ungroup(outputs, counts))
    for rank, run in enumerate(runs):
        _, weights, selected, _, _, _, counts, routing_map, _, _, _ = run.inputs
        received = torch.cat([reordered[src][rank * c : (rank + 1) * c] for src in range(W)])
        expected = combine(received, weights, selected, routing_map, M)
        assert run.output.shape == (M, N) and run.output.dtype == torch.bfloat16
        assert_close(29, run.output, expected, W, f"rank {rank}")
        assert_differs(29, run.output, torch.zeros_like(expected), W, "zeros")
        if W in (2, 4):
            equal = torch.full_like(counts, 2 * M // 8)
            regrouped = torch.cat([ungroup(runs[src].inputs[0], equal)[rank * c : (rank + 1) * c] for src in range(W)])
            assert_differs(29, run.output, combine(regrouped, weights, selected, routing_map, M), W, "equal chunks")
        if W > 1:
            local = combine(reordered[rank], weights, selected, routing_map, M)
            assert_differs(29, run.output, local, W, "no communication")
