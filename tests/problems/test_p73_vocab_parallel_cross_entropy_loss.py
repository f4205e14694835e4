import pytest
import torch

import problems
from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

PID = 73
BF = torch.bfloat16


def exact_loss(shards, target):
    """fp64 cross-entropy over the covered vocabulary; tokens whose target no rank owns get LSE - max (PKB quirk)."""
    X = torch.cat(shards, dim=-1).double()
    covered = target < X.shape[-1]
    picked = X.gather(-1, target.clamp(max=X.shape[-1] - 1).unsqueeze(-1)).squeeze(-1)
    return torch.logsumexp(X, dim=-1) - torch.where(covered, picked, X.amax(dim=-1))


def bf16_ring_loss(shards, target, start):
    """Megatron's arithmetic all in bf16, the W exp sums added in bf16 in ring order from ``start``."""
    m = torch.stack([s.max(dim=-1).values for s in shards]).max(dim=0).values
    shifted = [s - m.unsqueeze(-1) for s in shards]
    width = shards[0].shape[-1]
    pred = torch.zeros_like(m)
    for r, s in enumerate(shifted):
        owned = (target >= r * width) & (target < (r + 1) * width)
        value = s.gather(-1, (target - r * width).clamp(0, width - 1).unsqueeze(-1)).squeeze(-1)
        pred = pred + torch.where(owned, value, torch.zeros_like(value))
    partial = [s.exp().sum(dim=-1) for s in shifted]
    W = len(shards)
    Z = partial[start]
    for step in range(1, W):
        Z = Z + partial[(start + step) % W]
    return torch.log(Z) - pred


def test_world_size_rule():
    allows = problems.get(PID).allows_world_size
    assert allows(1) and allows(3) and allows(512) and not allows(513) and not allows(0)


@pytest.mark.parametrize("W, seed", [(1, 1), (2, 2), (4, 3), (3, 4), (8, 5)])
def test_reference_matches_global_cross_entropy(W, seed):
    runs = run_reference(PID, W, seed=seed, trial=seed)
    shards = [run.inputs[0] for run in runs]
    target = runs[0].inputs[1]
    assert shards[0].shape == (8, 1024, 512 // W)
    assert torch.equal(target.reshape(-1), (13 * torch.arange(8192) + 7 + seed) % 512)
    if 512 % W:
        assert (target >= W * (512 // W)).any()  # some targets belong to no rank
    exact = exact_loss(shards, target)
    rings = {start: bf16_ring_loss(shards, target, start) for start in {0, W // 2, W - 1}}
    for r, run in enumerate(runs):
        assert run.output.dtype == BF and run.output.shape == (8, 1024)
        assert torch.equal(run.output, runs[0].output)  # identical on every rank
        assert_close(PID, run.output, exact.to(BF), W, f"rank {r} vs fp64")
    for start, ring in rings.items():  # plain bf16 all-reduces in other orders pass too
        assert_close(PID, runs[0].output, ring, W, f"ring from {start}")
    output = runs[-1].output
    assert_differs(PID, output, torch.zeros_like(output), W, "zeros")
    if W > 1:
        local = exact_loss([shards[-1]], (target - (W - 1) * shards[-1].shape[-1]) % 512)
        assert_differs(PID, output, local.to(BF), W, "no communication")
