"""Shared pieces of problems 21 and 22 (VeOmni-style FSDP2 gradient clipping): random gradients whose global norm
cannot be guessed, the local sum of p-th powers of norms, and the in-place clip."""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch

from problems.base import InputContext


def random_grad(ctx: InputContext) -> torch.Tensor:
    """An (M, N) standard normal gradient times a random scale in [1/2, 2], drawn from the current RNG state.

    With unit-variance grads the global norm is sqrt(count * M * N * W) to within 0.1%, so a candidate could return
    that constant without reading a byte; the per-tensor scale makes the norm depend on every rank's data.
    """
    scale = math.exp(math.log(2.0) * (2.0 * torch.rand(()).item() - 1.0))
    g = torch.randn(ctx.M, ctx.N, dtype=torch.float32, device=ctx.device) * scale
    return g.to(ctx.dtype)


def grads_device(*grad_lists: Iterable[torch.Tensor | None]) -> torch.device:
    """The grads' device; as in the original, cuda:0 (or the CPU without CUDA) when every entry is None."""
    for grads in grad_lists:
        for g in grads:
            if g is not None:
                return g.device
    return torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")


def sum_of_powers(grads: Iterable[torch.Tensor | None], p: float, device: torch.device) -> torch.Tensor:
    """Sum over the non-None grads of ||fp32(g)||_p ** p, as a 0-d fp32 tensor."""
    acc = torch.zeros((), dtype=torch.float32, device=device)
    for g in grads:
        if g is not None:
            acc += torch.norm(g.float(), p) ** p
    return acc


def clip_(grads: Iterable[torch.Tensor | None], max_norm: float, total_norm: torch.Tensor) -> None:
    """Scale every grad in place by max_norm / total_norm when the norm exceeds max_norm (a host-side branch)."""
    if total_norm > max_norm:
        coef = max_norm / total_norm
        for g in grads:
            if g is not None:
                g.mul_(coef)
