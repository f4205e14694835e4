import pytest
import torch

import problems
from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

BF16 = torch.bfloat16


def rope_per_op(x, cos, sin):
    """Independent, per-op bf16: products rounded, then the sum rounded (float64 arithmetic in between)."""
    x, cos, sin = x.double(), cos[:, :, None].double(), sin[:, :, None].double()
    rotated = torch.cat((-x[..., 32:], x[..., :32]), dim=-1)
    return ((x * cos).to(BF16).double() + (rotated * sin).to(BF16).double()).to(BF16)


def rope_fused(x, cos, sin):
    """Independent, fused: everything in float64, rounded once (what a fused FMA kernel does)."""
    x, cos, sin = x.double(), cos[:, :, None].double(), sin[:, :, None].double()
    rotated = torch.cat((-x[..., 32:], x[..., :32]), dim=-1)
    return (x * cos + rotated * sin).to(BF16)


def test_world_size_rule():
    allows = problems.get(17).allows_world_size
    assert [W for W in range(1, 17) if allows(W)] == [1, 2, 4, 8]


@pytest.mark.parametrize(
    "W, seed, N", [(1, 1, 256), (2, 1, 256), (4, 1, 256), (1, 2, 192), (2, 2, 192), (4, 2, 192), (8, 3, 256)]
)
def test_reference_matches_gathered_rope(W, seed, N):
    M = 128
    runs = run_reference(17, W, M=M, N=N, seed=seed)
    B, T = M // 64, N // 64
    S_local = max(1, T // W)  # N = 192 at W = 2: the global sequence is 2 < T = 3; W = 8 > T: it is 8
    for run in runs:
        q, k, cos, sin = run.inputs
        assert q.shape == k.shape == (B, S_local, 8, 64) and cos.shape == sin.shape == (B, S_local, 64)
        assert q.abs().max() <= 4 and cos.abs().max() <= 1 and sin.abs().max() <= 1
    for name, rope in (("per-op", rope_per_op), ("fused", rope_fused)):
        expected = tuple(
            torch.cat([rope(run.inputs[i], run.inputs[2], run.inputs[3]) for run in runs], dim=1) for i in (0, 1)
        )
        assert expected[0].shape == (B, W * S_local, 8, 64)
        for rank, run in enumerate(runs):
            assert isinstance(run.output, tuple) and len(run.output) == 2
            assert_close(17, run.output, expected, W, f"rank {rank} vs {name}")
            if name == "per-op":
                assert torch.equal(run.output[0], expected[0]) and torch.equal(run.output[1], expected[1])

    reference, (q, k, cos, sin) = runs[0].output, runs[0].inputs
    zeros = torch.zeros_like(reference[0])
    assert_differs(17, reference, (zeros, zeros), W, "zeros")
    assert_differs(17, reference, (reference[1], reference[0]), W, "(k, q) order")

    def gathered(fn):
        return tuple(
            torch.cat([fn(run.inputs[i], run.inputs[2], run.inputs[3]) for run in runs], dim=1) for i in (0, 1)
        )

    wrong_sign = gathered(
        lambda x, c, s: x * c[:, :, None] + torch.cat((x[..., 32:], -x[..., :32]), -1) * s[:, :, None]
    )
    assert_differs(17, reference, wrong_sign, W, "rotate_half with the wrong sign")
    assert_differs(17, reference, gathered(lambda x, c, s: x * c[:, :, None]), W, "no rotation")
    half_cos = gathered(lambda x, c, s: rope_per_op(x, c[..., :32].repeat(1, 1, 2), s[..., :32].repeat(1, 1, 2)))
    assert_differs(17, reference, half_cos, W, "cos/sin halves assumed duplicated")
    if W == 1:
        assert_differs(17, reference, (q, k), W, "inputs unchanged")
    else:
        own = (rope_per_op(q, cos, sin), rope_per_op(k, cos, sin))
        tiled = tuple(x.repeat(1, W, 1, 1) for x in own)
        assert_differs(17, reference, tiled, W, "no communication (own shard W times)")
        assert_differs(17, reference, tuple(torch.cat([x] * W, dim=0) for x in own), W, "wrong dim")
