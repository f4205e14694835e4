import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


def expert_major_tokens(mask):
    """Token ids per expert, expert by expert, from the (E, 2, M) mask, by plain loops."""
    E, K, M = mask.shape
    return [t for e in range(E) for t in range(M) if any(mask[e, k, t] != 0 for k in range(K))]


def regroup(rows, counts):
    """Chunks arrive source-major (source i, local expert e); emit them local-expert-major."""
    W, L = counts.shape
    starts, offset = {}, 0
    for i in range(W):
        for e in range(L):
            starts[i, e] = (offset, offset + int(counts[i, e]))
            offset += int(counts[i, e])
    return torch.cat([rows[slice(*starts[i, e])] for e in range(L) for i in range(W)])


@pytest.mark.parametrize("W,seed", [(1, 0), (2, 0), (2, 30), (4, 30), (8, 0)])
def test_reference_matches_loop_dispatch(W, seed):
    M, N = 32, 16
    runs = run_reference(28, W, M=M, N=N, seed=seed)
    c = 2 * M // W
    permuted, ids = [], []
    for run in runs:
        hidden, mask, E, send, recv, counts, group = run.inputs
        assert mask.shape == (8, 2, M) and mask.dtype == torch.float32 and (E, group) == (8, None)
        assert (mask.sum(dim=1) <= 1).all() and (mask.sum(dim=(0, 1)) == 2).all()  # two distinct experts per token
        assert send == recv == [c] * W
        assert counts.dtype == torch.int64 and counts.shape == (W, 8 // W) and (counts.sum(1) == c).all()
        assert torch.equal(counts, runs[0].inputs[5])  # identical on all ranks
        ids.append(torch.tensor(expert_major_tokens(mask)))
        permuted.append(hidden[ids[-1]])
    if W in (2, 4):
        assert len(set(runs[0].inputs[5].reshape(-1).tolist())) > 1  # chunks of unequal sizes
    for rank, run in enumerate(runs):
        hidden, mask, _, _, _, counts, _ = run.inputs
        received = torch.cat([permuted[src][rank * c : (rank + 1) * c] for src in range(W)])
        expected = (regroup(received, counts), mask.sum(dim=1), ids[rank], (M, N))
        regrouped, routing_map, sorted_idx, shape = run.output
        assert sorted_idx.dtype == torch.int64 and routing_map.dtype == torch.float32 and tuple(shape) == (M, N)
        assert torch.equal(regrouped, expected[0]), f"rank {rank}"
        assert_close(28, run.output, expected, W, f"rank {rank}")
        zeros = tuple(torch.zeros_like(t) for t in expected[:3]) + ((M, N),)
        assert_differs(28, run.output, zeros, W, "zeros")
        assert_differs(28, run.output, hidden, W, "input unchanged")
        if W in (2, 4):  # regrouping as if all chunks had the same size
            equal = torch.full_like(counts, 2 * M // 8)
            assert_differs(28, run.output, (regroup(received, equal),) + expected[1:], W, "equal-chunk regroup")
        if W > 1:
            assert_differs(28, run.output, (regroup(permuted[rank], counts),) + expected[1:], W, "no communication")
