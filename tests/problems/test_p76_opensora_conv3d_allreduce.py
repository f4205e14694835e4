import pytest
import torch
import torch.nn.functional as F

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


def bf16_ring(partials, start):
    """NCCL-like reduction: bf16 additions in ring order from ``start``."""
    acc = partials[start]
    for step in range(1, len(partials)):
        acc = (acc.float() + partials[(start + step) % len(partials)].float()).to(torch.bfloat16)
    return acc


@pytest.mark.parametrize("W,seed", [(1, 1), (2, 1), (3, 6), (4, 6)])
def test_reference_matches_independent_conv(W, seed):
    runs = run_reference(76, W, seed=seed)
    C_out = {1: 512, 2: 512, 3: 512, 4: 512}[W]
    assert runs[0].inputs[1].shape[:2] == (C_out, C_out // W)
    bias = runs[0].inputs[2]
    partials = [F.conv3d(run.inputs[0].float(), run.inputs[1].float()).to(torch.bfloat16) for run in runs]

    # The global convolution in fp32 (products of bf16 values are exact) (all input channels, the concatenated
    # weight), bias added in bf16.
    x = torch.cat([run.inputs[0] for run in runs], dim=1).float()
    w = torch.cat([run.inputs[1] for run in runs], dim=1).float()
    exact = F.conv3d(x, w).to(torch.bfloat16) + bias.view(1, -1, 1, 1, 1)
    candidates = {"exact": exact}
    for start in range(W):  # any NCCL ring order in bf16 must pass too
        candidates[f"ring from {start}"] = bf16_ring(partials, start) + bias.view(1, -1, 1, 1, 1)
    for rank, run in enumerate(runs):
        assert run.output.shape == (1, C_out, 2, 6, 6)
        for name, expected in candidates.items():
            assert_close(76, run.output, expected, W, f"{name}, rank {rank}")

    out = runs[-1].output
    assert_differs(76, out, torch.zeros_like(out), W, "zeros")
    if W > 1:
        assert_differs(76, out, partials[-1] + bias.view(1, -1, 1, 1, 1), W, "no communication")
