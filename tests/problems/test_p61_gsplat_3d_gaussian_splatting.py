import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

PID = 61
BF = torch.bfloat16


def mm(a, b):
    """A bf16 matrix product: fp32 accumulation, one rounding."""
    return (a.float() @ b.float()).to(BF)


def splats(means, quats, scales, viewmat, K, width, height, eps2d, near, far):
    """Independent per-Gaussian projection into one camera, every elementwise step rounded to bf16.

    Returns (visible mask, radii int32 (n, 2), means2d (n, 2), depth (n,), conic (n, 3))."""
    norm = quats.float().pow(2).sum(-1).sqrt().to(BF).clamp_min(1e-12)
    w, x, y, z = (quats / norm[:, None]).unbind(-1)

    def two(t):
        return 2 * t

    rot = torch.stack(
        [
            torch.stack([1 - two(y * y + z * z), two(x * y - w * z), two(x * z + w * y)], -1),
            torch.stack([two(x * y + w * z), 1 - two(x * x + z * z), two(y * z - w * x)], -1),
            torch.stack([two(x * z - w * y), two(y * z + w * x), 1 - two(x * x + y * y)], -1),
        ],
        -2,
    )
    half = rot * scales[:, None, :]
    cov = mm(half, half.transpose(1, 2))
    Rc, tc = viewmat[:3, :3], viewmat[:3, 3]
    mc = mm(means, Rc.T) + tc
    cov_c = mm(mm(Rc.expand(len(cov), 3, 3), cov), Rc.T.expand(len(cov), 3, 3))
    fx, fy, cx, cy = K[0, 0], K[1, 1], K[0, 2], K[1, 2]
    tz = mc[:, 2]

    def lim(extent, c, f):
        return ((extent - c) / f + 0.3 * (0.5 * extent / f), c / f + 0.3 * (0.5 * extent / f))

    (xp, xn), (yp, yn) = lim(width, cx, fx), lim(height, cy, fy)
    tx = tz * torch.maximum(torch.minimum(mc[:, 0] / tz, xp), -xn)
    ty = tz * torch.maximum(torch.minimum(mc[:, 1] / tz, yp), -yn)
    J = torch.zeros(len(tz), 2, 3, dtype=BF)
    J[:, 0, 0], J[:, 1, 1] = fx / tz, fy / tz
    J[:, 0, 2], J[:, 1, 2] = -fx * tx / (tz * tz), -fy * ty / (tz * tz)
    cov2 = mm(mm(J, cov_c), J.transpose(1, 2))
    eps = torch.tensor(eps2d, dtype=BF)
    a, b, c, d = cov2[:, 0, 0] + eps, cov2[:, 0, 1], cov2[:, 1, 0], cov2[:, 1, 1] + eps
    det = (a * d - b * c).clamp_min(1e-10)
    conic = torch.stack([d / det, -(b + c) / 2 / det, a / det], -1)
    m2d = mm(mc, K[:2, :3].T) / tz[:, None]
    rad = torch.stack([torch.ceil(3.33 * a.sqrt()), torch.ceil(3.33 * d.sqrt())], -1)
    rad = rad * ((tz > near) & (tz < far))[:, None]
    rad = (
        rad
        * (
            (m2d[:, 0] + rad[:, 0] > 0)
            & (m2d[:, 0] - rad[:, 0] < width)
            & (m2d[:, 1] + rad[:, 1] > 0)
            & (m2d[:, 1] - rad[:, 1] < height)
        )[:, None]
    )
    rad = rad.int()
    return (rad > 0).all(-1), rad, m2d, tz, conic


def expected_for(runs, dest, offset_by_source=False):
    """Rows camera `dest` receives: every source's visible Gaussians in source order, ids offset by dest's prefix
    (or, with offset_by_source, by the source's prefix: the "obvious" global id that gsplat does not use)."""
    pieces = []
    for source, run in enumerate(runs):
        prefix = sum(len(runs[k].inputs[0]) for k in range(source if offset_by_source else dest))
        means, quats, scales, opac, colors, views, Ks, width, height, eps2d, near, far, _ = run.inputs
        vis, rad, m2d, depth, conic = splats(means, quats, scales, views[0], Ks[0], width, height, eps2d, near, far)
        idx = vis.nonzero().squeeze(1)
        pieces.append(
            (torch.zeros_like(idx), idx + prefix, rad[idx], m2d[idx], depth[idx], conic[idx], opac[idx], colors[idx])
        )
    return tuple(torch.cat(parts) for parts in zip(*pieces, strict=True))


@pytest.mark.parametrize("W, seed", [(1, 1), (2, 2), (4, 3), (4, 4)])
def test_reference_matches_independent_projection(W, seed):
    runs = run_reference(PID, W, M=256, N=192, seed=seed)
    assert runs[0].inputs[7:] == (192, 256, 0.3, 0.01, 1e10, "pinhole")
    for rank, run in enumerate(runs):
        expected = expected_for(runs, rank)
        assert [t.dtype for t in run.output] == [torch.int64, torch.int64, torch.int32] + [BF] * 5
        assert_close(PID, run.output, expected, W, f"rank {rank}")
        assert (run.output[2] != expected[2]).sum() <= 2  # radii: at most a rare +-1 flip
        # The ids must be bit-exact and follow gsplat's destination-offset quirk.
        assert torch.equal(run.output[1], expected[1])
        zeros = tuple(torch.zeros_like(t) for t in expected)
        assert_differs(PID, run.output, zeros, W, "zeros")
        if W > 1:
            alone = expected_for([runs[rank]], 0)  # this rank's own splats, no exchange
            assert_differs(PID, run.output, alone, W, "no communication")
            assert_differs(PID, run.output, expected_for(runs, rank, offset_by_source=True), W, "global ids")
