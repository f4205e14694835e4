import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

PID = 66


def scatter_add(rows, ids, size):
    return torch.zeros(size, rows.shape[1], dtype=torch.float64).index_add_(0, ids, rows.double()).float()


@pytest.mark.parametrize("W, seed", [(1, 1), (2, 2), (4, 3), (3, 4)])
def test_reference_matches_shifted_scatter_add(W, seed):
    runs = run_reference(PID, W, M=256, N=48, seed=seed)
    R = max(64, 256 // W)
    chunks = [run.inputs[0].split(R) for run in runs]
    for r, run in enumerate(runs):
        grad, ids, size = run.inputs[:3]
        assert size == R * W // 2 and grad.dtype == torch.float32
        received = torch.cat([chunks[(r + i) % W][(-i) % W] for i in range(W)])
        expected = scatter_add(received, ids, size)
        assert_close(PID, run.output, expected, W, f"rank {r}")
        assert_differs(PID, run.output, torch.zeros_like(expected), W, "zeros")
        if W > 1:
            assert_differs(PID, run.output, scatter_add(grad, ids, size), W, "no communication")
            plain = torch.cat([chunks[j][r] for j in range(W)])  # an unshifted all_to_all
            assert_differs(PID, run.output, scatter_add(plain, ids, size), W, "unshifted all_to_all")
