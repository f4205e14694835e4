import pytest
import torch

import problems
from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

PID = 72
BF = torch.bfloat16


def natural(blocks, W):
    """Global (B, C, S) in natural order from every rank's zigzag-local (B, C, L) block."""
    L = blocks[0].shape[-1] // 2
    chunks = [None] * (2 * W)
    for r, block in enumerate(blocks):
        chunks[r], chunks[2 * W - 1 - r] = block[..., :L], block[..., L:]
    return torch.cat(chunks, dim=-1)


def zigzag_local(t, r, W):
    L = t.shape[-1] // (2 * W)
    return torch.cat([t[..., r * L : (r + 1) * L], t[..., (2 * W - 1 - r) * L : (2 * W - r) * L]], dim=-1)


def hyena(x1, x2, v, h, bias):
    """z = x1 * bf16(causal_conv(u, h) + u * bias), u = bf16(x2 * v); the convolution by an exact fp64 FFT."""
    u = x2 * v
    S = u.shape[-1]
    n = 2 * S
    y = torch.fft.irfft(torch.fft.rfft(u.double(), n=n) * torch.fft.rfft(h.double(), n=n), n=n)[..., :S]
    return x1 * (y + u.double() * bias.double()[:, None]).to(x1.dtype)


def test_world_size_rule():
    allows = problems.get(PID).allows_world_size
    assert [W for W in range(1, 17) if allows(W)] == [1, 2, 4, 8, 16]


@pytest.mark.parametrize("W, seed", [(1, 1), (2, 2), (4, 3)])
def test_reference_matches_fp64_convolution(W, seed):
    runs = run_reference(PID, W, seed=seed)
    x1, x2, v = (natural([run.inputs[i] for run in runs], W) for i in range(3))
    h, bias, num_groups, group_dim = runs[0].inputs[3:7]
    C, Lh = h.shape
    assert (num_groups, group_dim) == (C, 1) and h[5, 0].item() == 5 and bias[512 % C].item() == (512 % C) / C
    z = hyena(x1, x2, v, h, bias)
    # A wrong layout: the local blocks taken as contiguous pieces of the sequence (no zigzag reordering).
    unzigzagged = hyena(*(torch.cat([run.inputs[i] for run in runs], dim=-1) for i in range(3)), h, bias)
    for r, run in enumerate(runs):
        expected = zigzag_local(z, r, W).transpose(1, 2).contiguous()
        assert_close(PID, run.output, expected, W, f"rank {r}")
        if r != W - 1:
            continue
        assert_differs(PID, run.output, torch.zeros_like(expected), W, "zeros")
        assert_differs(PID, run.output, run.inputs[0].transpose(1, 2).contiguous(), W, "x1 unchanged")
        if W > 1:
            alone = hyena(*run.inputs[:3], h, bias)  # this rank's own sequence only
            assert_differs(PID, run.output, alone.transpose(1, 2).contiguous(), W, "no communication")
            L = run.inputs[0].shape[-1]
            wrong = unzigzagged[..., r * L : (r + 1) * L].transpose(1, 2).contiguous()
            assert_differs(PID, run.output, wrong, W, "no zigzag reordering")
