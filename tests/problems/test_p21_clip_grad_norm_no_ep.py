import math

import pytest
import torch

from problems.p21_clip_grad_norm_no_ep import solution
from tests.problems.helpers import assert_close, assert_differs
from tests.world import GroupRef, run_reference


def norm(grads):
    return math.sqrt(sum(g.double().pow(2).sum().item() for g in grads))


def solution_and_grads(*inputs):
    """The reference, also returning the grads after its in-place clipping."""
    return solution(*inputs), inputs[0]


@pytest.mark.parametrize("W,seed", [(1, 0), (2, 0), (2, 4), (4, 4)])
def test_reference_matches_global_norm_and_clips(W, seed):
    M, N = 32, 48
    runs = run_reference(21, W, M=M, N=N, seed=seed, solution=solution_and_grads)
    grads, max_norm, norm_type, group = runs[0].inputs
    assert len(grads) == 3 and max_norm == 1.0 and norm_type == 2.0 and group == GroupRef(tuple(range(W)))
    total = norm([g for run in runs for g in run.inputs[0]])
    expected = torch.tensor(total, dtype=torch.float32)
    for rank, run in enumerate(runs):
        got, clipped = run.output
        assert got.dtype == torch.float32 and got.dim() == 0
        assert_close(21, got, expected, W, f"rank {rank}")
        for before, after in zip(run.inputs[0], clipped, strict=True):  # clipped in place to a global norm of max_norm
            assert after.dtype == before.dtype
            torch.testing.assert_close(after.double(), before.double() / total, rtol=1e-2, atol=1e-4)
    assert_differs(21, expected, torch.zeros(()), W, "zeros")
    assert_differs(21, expected, torch.tensor(math.sqrt(3 * M * N * W)), W, "unit-variance constant")
    if W > 1:
        for rank, run in enumerate(runs):
            local = torch.tensor(norm(run.inputs[0]), dtype=torch.float32)
            assert_differs(21, expected, local, W, f"rank {rank} local norm (no communication)")
