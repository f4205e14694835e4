"""Delayed-scaling FP8 (e4m3) quantize-dequantize with an amax history, shared by problems 52 and 53.

The spec's recipe: a = max |x| of the LOCAL tensor; the history is rotated left by one and its last slot set to
bf16(a); scale = max(history) / 448; x is divided by the scale in fp32, rounded to float8_e4m3fn, multiplied back and
cast to D. Each rank uses its own scale (no cross-rank amax agreement).
"""

from __future__ import annotations

import math

import torch

from problems.base import InputContext

HISTORY_LEN = 16
E4M3_MAX = 448.0


def shard_length(M: int) -> int:
    return max(64, min(64 * M, 4096))


def make_history(ctx: InputContext, numel: int) -> torch.Tensor:
    """A random bf16 amax history, identical on all ranks, on the scale of the amax of ``numel`` normal values.

    PKB fills it with 1e-8, so max(history) is always the new local amax and neither the rotation nor the history's
    max is ever exercised. Here the entries are level * U(0.6, 1.0) with level = typical amax * U(0.8, 1.3) per
    trial, so across ranks and trials either the new amax or an older entry sets the scale; the oldest entry (slot
    0, dropped by the rotation) is drawn from level * U(0.9, 1.3) and is often the largest, so a history that is not
    rotated before taking the max gives the wrong scale.
    """
    ctx.seed("amax_history")
    typical = math.sqrt(2.0 * math.log(numel))
    level = typical * (0.8 + 0.5 * torch.rand(()).item())
    history = level * (0.6 + 0.4 * torch.rand(HISTORY_LEN))
    history[0] = level * (0.9 + 0.4 * torch.rand(()).item())
    return history.to(torch.bfloat16).to(ctx.device)


def quantize_dequantize(x: torch.Tensor, amax_history: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(recon in x.dtype, new history in bf16); the input history is not modified."""
    amax = x.abs().max().float()
    new_hist = torch.roll(amax_history, shifts=-1)
    new_hist[-1] = amax.to(torch.bfloat16)
    top = new_hist.max().clamp_min(1e-12).float()
    scale = top / torch.full_like(top, E4M3_MAX)  # IEEE on CUDA too (p19_blocked_fp8_quantize.py says why)
    recon = ((x.float() / scale).to(torch.float8_e4m3fn).float() * scale).to(x.dtype)
    return recon, new_hist
