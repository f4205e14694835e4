"""Element-wise closeness with per-element allowances, for the custom ``compare`` hooks of problems 19 and 25.

The judge's generic comparison gives one absolute slack per tensor; these problems need an allowance that differs by
element (a relative-only check for tiny scales, an extra margin that depends on each token's bf16 spacing). Returns
None when equal, else a message, like ``Problem.compare``. Imports torch only (problems never import the evaluator).
"""

from __future__ import annotations

from typing import Any

import torch


def tensor_mismatch(
    expected: torch.Tensor,
    actual: Any,
    atol: float,
    rtol: float,
    extra: float | torch.Tensor = 0.0,
    what: str = "output",
) -> str | None:
    """Shape and dtype must match; then |actual - expected| <= atol + extra + rtol * |expected| per element.

    ``extra`` is a number or a tensor broadcastable to ``expected``. NaN or inf in ``actual`` fail unless the
    reference holds the very same value there.
    """
    if type(actual) is not torch.Tensor:
        return f"{what}: expected a torch.Tensor, got {type(actual).__name__}"
    if tuple(actual.shape) != tuple(expected.shape):
        return f"{what}: shape {tuple(actual.shape)} != expected {tuple(expected.shape)}"
    if actual.dtype != expected.dtype:
        return f"{what}: dtype {actual.dtype} != expected {expected.dtype}"
    if expected.numel() == 0:
        return None
    e = expected.detach().cpu().double()
    a = actual.detach().cpu().double()
    if isinstance(extra, torch.Tensor):
        extra = extra.detach().cpu().double()
    allowed = atol + extra + rtol * e.abs()
    same = (a == e) | (torch.isnan(a) & torch.isnan(e))
    bad = ~((a - e).abs() <= allowed) & ~same  # NaN differences compare False, so they count as bad
    if not bad.any():
        return None
    flat = int(bad.reshape(-1).nonzero()[0].item())
    index = [int(i) for i in torch.unravel_index(torch.tensor(flat), e.shape)] if e.dim() else []
    at = tuple(index)
    return (
        f"{what}: {int(bad.sum())} of {e.numel()} elements out of tolerance; first at {index}: "
        f"got {a[at].item():.6g}, expected {e[at].item():.6g}, allowed |diff| {allowed.expand_as(e)[at].item():.3g}"
    )


def sequence_mismatch(actual: Any, length: int, what: str = "output") -> str | None:
    """The output must be a tuple or list of ``length`` elements."""
    if not isinstance(actual, (tuple, list)):
        return f"{what}: expected a tuple of {length}, got {type(actual).__name__}"
    if len(actual) != length:
        return f"{what}: expected {length} elements, got {len(actual)}"
    return None
