import math

import pytest
import torch

from problems.p22_clip_grad_norm_ep import solution
from tests.problems.helpers import assert_close, assert_differs
from tests.world import GroupRef, run_reference


def sq(grads, scale=1.0):
    return sum((g.double() * scale).pow(2).sum().item() for g in grads)


def expected_groups(W, rank):
    """(ep_size, ep_fsdp_group, ep_group) as the spec lays them out, written out by hand."""
    if W % 2 == 0 and W >= 4:
        half = W // 2
        return (
            half,
            GroupRef((rank % half, rank % half + half)),
            GroupRef(tuple(range(rank // half * half, rank // half * half + half))),
        )
    return max(1, W // 2), GroupRef(tuple(range(W))), None


def solution_and_grads(*inputs):
    return solution(*inputs), inputs[0] + inputs[1]


@pytest.mark.parametrize("W,seed", [(1, 0), (2, 0), (4, 6), (5, 6), (8, 0)])
def test_reference_matches_ep_aware_norm(W, seed):
    M, N = 16, 32
    runs = run_reference(22, W, M=M, N=N, seed=seed, solution=solution_and_grads)
    ep_size = max(1, W // 2)
    non_ep = sum(sq(run.inputs[0]) for run in runs)
    ep = sum(sq(run.inputs[1], 1.0 / ep_size) for run in runs)
    total = math.sqrt(non_ep + ep)
    expected = torch.tensor(total, dtype=torch.float32)
    for rank, run in enumerate(runs):
        ne, e, max_norm, norm_type, size, fsdp, ep_fsdp, ep_group = run.inputs
        assert (len(ne), len(e), max_norm, norm_type) == (1, 1, 1.0, 2.0)
        assert fsdp == GroupRef(tuple(range(W)))
        assert (size, ep_fsdp, ep_group) == expected_groups(W, rank)
        got, clipped = run.output
        assert got.dtype == torch.float32 and got.dim() == 0
        assert_close(22, got, expected, W, f"rank {rank}")
        for before, after in zip(ne + [g / ep_size for g in e], clipped, strict=True):
            torch.testing.assert_close(after.double(), before.double() / total, rtol=2e-2, atol=1e-4)
    assert_differs(22, expected, torch.zeros(()), W, "zeros")
    if ep_size > 1:
        forgot_scaling = math.sqrt(non_ep + sum(sq(run.inputs[1]) for run in runs))
        assert_differs(22, expected, torch.tensor(forgot_scaling), W, "no 1/ep_size pre-scaling")
    if W > 1:
        local = math.sqrt(sq(runs[0].inputs[0]) + sq(runs[0].inputs[1], 1.0 / ep_size))
        assert_differs(22, expected, torch.tensor(local), W, "local norm (no communication)")
