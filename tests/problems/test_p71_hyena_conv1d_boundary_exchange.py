import pytest
import torch

import problems
from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

PID = 71


def causal_conv(context, chunk, weight):
    """y[c, t] = sum_j w[c, j] * s[c, t + j] over s = context ++ chunk (6 + L samples), in float64 (shift and add)."""
    taps, length = weight.shape[-1], chunk.shape[-1]
    s = torch.cat([context, chunk], dim=-1).double()
    w = weight.double()[:, 0]
    return sum(w[:, j : j + 1] * s[:, j : j + length] for j in range(taps))


def test_world_size_rule():
    allows = problems.get(PID).allows_world_size
    assert not allows(1) and all(allows(W) for W in (2, 3, 4, 8))


@pytest.mark.parametrize("W, seed", [(2, 1), (4, 2), (3, 3)])
def test_reference_matches_global_causal_conv(W, seed):
    runs = run_reference(PID, W, seed=seed)
    L = runs[0].inputs[0].shape[-1] // 2
    chunks = [None] * (2 * W)
    for r, run in enumerate(runs):
        chunks[r], chunks[2 * W - 1 - r] = run.inputs[0][0, :, :L], run.inputs[0][0, :, L:]
    sequence = torch.cat([torch.zeros_like(chunks[0][:, :6])] + chunks, dim=-1)  # zero-padded, natural order

    def convolve(c, weight):  # global chunk c with the 6 samples before it
        return causal_conv(sequence[:, c * L : c * L + 6], chunks[c], weight)

    for r, run in enumerate(runs):
        x, weight = run.inputs[:2]
        expected = torch.cat([convolve(r, weight), convolve(2 * W - 1 - r, weight)], dim=-1)[None].to(x.dtype)
        assert_close(PID, run.output, expected, W, f"rank {r}")
        if r == W - 1:
            assert_differs(PID, run.output, torch.zeros_like(expected), W, "zeros")
            assert_differs(PID, run.output, x, W, "input unchanged")
            zero = torch.zeros_like(chunks[0][:, :6])
            alone = torch.cat([causal_conv(zero, x[0, :, :L], weight), causal_conv(zero, x[0, :, L:], weight)], -1)
            assert_differs(PID, run.output, alone[None].to(x.dtype), W, "no communication (zero halos)")
