import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

PID = 45


def rms_norm(x, gamma, eps):
    """Independent RMSNorm: fp32, via the variance of the row (no rsqrt of the reference)."""
    x = x.float()
    return (x / (x.square().mean(-1, keepdim=True) + eps).sqrt() * gamma.float()).to(torch.bfloat16)


def bf16_ring_sum(parts, start):
    acc = parts[start]
    for step in range(1, len(parts)):
        acc = (acc + parts[(start + step) % len(parts)]).to(torch.bfloat16)
    return acc


@pytest.mark.parametrize("W", [1, 2, 4])
@pytest.mark.parametrize("seed", [1, 2])
def test_reference_matches_independent_rmsnorm(W, seed):
    M, N = 96, 64
    runs = run_reference(PID, W, M=M, N=N, seed=seed)
    gamma, eps = runs[0].inputs[1], runs[0].inputs[2]
    hidden = gamma.numel()
    rows = max(2, max(M, W) // max(W, 4))
    full = torch.stack([run.inputs[0] for run in runs])  # (W, W*chunk)
    assert full.shape[1] == W * rows * hidden
    assert all(torch.equal(run.inputs[1], gamma) for run in runs), "gamma must be identical on all ranks"
    chunk = rows * hidden
    for rank, run in enumerate(runs):
        parts = [full[s, rank * chunk : (rank + 1) * chunk] for s in range(W)]
        for start in range(W):  # any bf16 summation order gives the same (exact) sum
            x = (bf16_ring_sum(parts, start) / W).to(torch.bfloat16).view(rows, hidden)
            assert_close(PID, rms_norm(x, gamma, eps), run.output, W, f"rank {rank}, ring from {start}")
        assert_differs(PID, run.output, torch.zeros_like(run.output), W, "zeros")
        if W > 1:
            local = (parts[rank] / W).to(torch.bfloat16).view(rows, hidden)
            assert_differs(PID, run.output, rms_norm(local, gamma, eps), W, "no communication")
