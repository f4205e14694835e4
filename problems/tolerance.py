"""Compare one rank's candidate output with the reference output, structurally and numerically: the tolerance
check every problem is judged by. It lives with the problems because some problems' own ``compare`` (p61, p69) apply
it to parts of their output, and problems never import the evaluator; the judge takes it from here
(evaluator/rank/outputs.py).

Used only in trusted processes: the reference's ranks (evaluator/rank/outputs.py, where the reference's output is, on
the GPU or the host) and tests. Returns None when equal, otherwise a message that says which output, where and by how
much, with error statistics the JSON reports.

Dtypes (docs/dtype.md): an integer output is compared by value, whatever its integer width (a narrower type is fine
when every value is equal); a floating (or complex) output of another floating dtype is compared under the problem's
tolerance and, if within it, passes with a note in ``dtype_differs`` (the judge flags the result, which then never
ranks: a lower precision halves the bytes a kernel moves). ``strict_dtype`` (a problem whose spec fixes the dtype)
turns any difference into a mismatch. Booleans stay booleans.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import torch


@dataclasses.dataclass
class Mismatch:
    path: str
    message: str
    index: list[int] | None = None


@dataclasses.dataclass
class Comparison:
    ok: bool
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    mismatch: Mismatch | None = None
    # Floating outputs that passed in another dtype than the reference's: "path: got dtype for expected dtype".
    dtype_differs: list = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict:
        out = {
            "ok": self.ok,
            "max_abs_error": _finite(self.max_abs_error),
            "max_rel_error": _finite(self.max_rel_error),
        }
        if self.ok and self.dtype_differs:
            out["dtype_differs"] = list(self.dtype_differs)
        if self.mismatch:
            out.update(
                where=self.mismatch.path, message=self.mismatch.message, first_mismatch_index=self.mismatch.index
            )
        return out


def _finite(x: float):
    return x if math.isfinite(x) else str(x)


def compare(
    expected: Any,
    actual: Any,
    atol: float,
    rtol: float,
    slack: Callable[[torch.Tensor], float] | None = None,
    strict_dtype: str | None = None,
) -> Comparison:
    """``strict_dtype``: why this problem's spec fixes the output dtype (any difference then fails), or None."""
    result = Comparison(ok=True)
    _walk(expected, actual, "output", atol, rtol, slack, result, strict_dtype)
    return result


def _fail(result: Comparison, path: str, message: str, index=None) -> None:
    if result.ok:
        result.ok = False
        result.mismatch = Mismatch(path, message, index)


def _walk(expected, actual, path, atol, rtol, slack, result: Comparison, strict=None) -> None:
    if not result.ok:
        return
    if isinstance(expected, torch.Tensor):
        if type(actual) is not torch.Tensor:
            return _fail(result, path, f"expected a torch.Tensor, got {type(actual).__name__}")
        return _tensor(expected, actual, path, atol, rtol, slack, result, strict)
    if isinstance(expected, (tuple, list)):
        if not isinstance(actual, (tuple, list)):
            return _fail(
                result, path, f"expected a {type(expected).__name__} of {len(expected)}, got {type(actual).__name__}"
            )
        if len(actual) != len(expected):
            return _fail(result, path, f"expected {len(expected)} elements, got {len(actual)}")
        for i, (e, a) in enumerate(zip(expected, actual, strict=False)):
            _walk(e, a, f"{path}[{i}]", atol, rtol, slack, result, strict)
        return
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return _fail(result, path, f"expected a dict, got {type(actual).__name__}")
        if set(expected) != set(actual):
            return _fail(result, path, f"expected keys {sorted(map(str, expected))}, got {sorted(map(str, actual))}")
        for key in expected:
            _walk(expected[key], actual[key], f"{path}[{key!r}]", atol, rtol, slack, result, strict)
        return
    if expected is None:
        if actual is not None:
            _fail(result, path, f"expected None, got {type(actual).__name__}")
        return
    if isinstance(expected, bool) or isinstance(actual, bool):
        if expected is not actual and expected != actual:
            _fail(result, path, f"expected {expected!r}, got {actual!r}")
        return
    if isinstance(expected, (int, float)):
        if isinstance(actual, torch.Tensor) and actual.numel() == 1 and type(actual) is torch.Tensor:
            actual = actual.item()
        if not isinstance(actual, (int, float)):
            return _fail(result, path, f"expected a number, got {type(actual).__name__}")
        diff = abs(float(actual) - float(expected))
        if math.isnan(float(actual)) != math.isnan(float(expected)) or diff > atol + rtol * abs(float(expected)):
            _fail(result, path, f"expected {expected!r}, got {actual!r} (|diff| {diff:.4g})")
        result.max_abs_error = max(result.max_abs_error, diff)
        return
    if expected != actual:
        _fail(result, path, f"expected {expected!r}, got {actual!r}")


def _kind(dtype: torch.dtype) -> str:
    if dtype == torch.bool:
        return "bool"
    if dtype.is_complex:
        return "complex"
    return "floating" if dtype.is_floating_point else "integer"


def _tensor(
    expected: torch.Tensor, actual: torch.Tensor, path, atol, rtol, slack, result: Comparison, strict=None
) -> None:
    if tuple(actual.shape) != tuple(expected.shape):
        return _fail(result, path, f"shape {tuple(actual.shape)} != expected {tuple(expected.shape)}")
    differs = actual.dtype != expected.dtype
    if differs:
        if strict:
            return _fail(
                result,
                path,
                f"dtype {actual.dtype} != expected {expected.dtype} (this problem's spec fixes "
                f"the output dtype: {strict})",
            )
        if _kind(actual.dtype) != _kind(expected.dtype):
            return _fail(
                result,
                path,
                f"dtype {actual.dtype} != expected {expected.dtype} (a {_kind(expected.dtype)} "
                f"output must be {_kind(expected.dtype)})",
            )
    if expected.numel() == 0:
        return
    if actual.is_sparse or actual.layout != torch.strided:
        return _fail(result, path, f"layout {actual.layout} is not strided")
    # On the reference's device: a GPU checks a 300 MB output in milliseconds, a host core in a second.
    e = expected.detach()
    a = actual.detach().to(e.device)
    if not (expected.is_floating_point() or expected.is_complex()):
        if differs:  # integers by value: both widened (a value the narrower type could not hold already differs)
            e, a = e.to(torch.int64), a.to(torch.int64)
        unequal = a != e
        if unequal.any():
            index = _first(unequal)
            return _fail(
                result,
                path,
                f"{int(unequal.sum())} of {expected.numel()} elements differ; first at "
                f"{index}: {a[tuple(index)].item()} != {e[tuple(index)].item()}",
                index,
            )
        return
    if e.is_complex():
        e, a = torch.view_as_real(e), torch.view_as_real(a)
    extra = float(slack(expected)) if slack is not None else 0.0
    if differs:
        result.dtype_differs.append(f"{path}: {actual.dtype} for expected {expected.dtype}".replace("torch.", ""))
    elif torch.equal(a, e):
        return  # bit-identical (NaN never compares equal, so this cannot hide one): nothing to measure
    # Half, bfloat16 and float32 values are exact in float32, and the rounding of their differences there (2^-24
    # relative) is far below any tolerance; float64 stays float64. This keeps the check a few passes over the data
    # instead of dozens in double, which on large outputs was most of the judge's own time.
    work = torch.float64 if torch.float64 in (e.dtype, a.dtype) else torch.float32
    if _within(e, a, atol + extra, rtol, result, work):
        return
    e, a = e.double(), a.double()
    bad_value = ~torch.isfinite(a) & torch.isfinite(e)
    if bad_value.any():
        index = _first(bad_value)
        return _fail(
            result,
            path,
            f"{int(bad_value.sum())} non-finite values (NaN/inf) where the reference is finite; "
            f"first at {index}: {a[tuple(index)].item()}",
            index,
        )
    nan_mismatch = torch.isnan(e) != torch.isnan(a)
    diff = (a - e).abs()
    diff = torch.where(torch.isnan(e) & torch.isnan(a), torch.zeros_like(diff), diff)
    diff = torch.where(torch.isinf(e) & (a == e), torch.zeros_like(diff), diff)
    finite = torch.isfinite(diff)
    max_abs = diff[finite].max().item() if finite.any() else 0.0
    rel = diff / e.abs().clamp_min(1e-12)
    max_rel = rel[finite].max().item() if finite.any() else 0.0
    result.max_abs_error = max(result.max_abs_error, max_abs)
    result.max_rel_error = max(result.max_rel_error, max_rel)
    allowed = atol + extra + rtol * e.abs()
    bad = (diff > allowed) | nan_mismatch | ~finite & ~(torch.isinf(e) & (a == e))
    if bad.any():
        index = _first(bad)
        at = tuple(index)
        note = f" (output dtype {actual.dtype}, reference {expected.dtype})".replace("torch.", "") if differs else ""
        _fail(
            result,
            path,
            f"{int(bad.sum())} of {e.numel()} elements outside atol={atol + extra:.3g}, rtol={rtol:.3g}; "
            f"max |diff| {max_abs:.4g}; first at {index}: got {a[at].item():.6g}, expected {e[at].item():.6g}"
            f"{note}",
            index,
        )


# Elements per slice in the common-case check: on the host, slices that stay in cache instead of whole-output
# temporaries (a 150M-element output made a dozen 600 MB arrays, most of the judge's time on problem 77 when outputs
# differ); on a GPU, few enough slices that their launches and syncs stay far below the passes over memory.
CHUNK = 1 << 21
DEVICE_CHUNK = 1 << 26


def _within(e: torch.Tensor, a: torch.Tensor, atol: float, rtol: float, result: Comparison, work) -> bool:
    """The common case in few passes over cache-sized slices (in ``work`` precision): a finite reference and every
    element within tolerance. Records the error sizes and returns True; False sends the caller to the full
    element-by-element diagnosis (non-finite values, matching NaN/inf, first bad index)."""
    e, a = e.reshape(-1), a.reshape(-1)
    max_abs = max_rel = 0.0
    step = CHUNK if e.device.type == "cpu" else DEVICE_CHUNK
    for start in range(0, e.numel(), step):
        ec, ac = e[start : start + step].to(work), a[start : start + step].to(work)
        magnitude = ec.abs()
        # In place only on a converted copy: a slice already in ``work`` precision is a view of the caller's output.
        diff = (ac - ec).abs_() if a.dtype == work else ac.sub_(ec).abs_()
        # With a finite reference the allowance is finite, so ``diff <= allowance`` also rejects NaN and inf in ``a``.
        if not (bool(torch.isfinite(magnitude).all()) and bool((diff <= magnitude * rtol + atol).all())):
            return False
        max_abs = max(max_abs, float(diff.max()))
        max_rel = max(max_rel, float((diff / magnitude.clamp_min_(1e-12)).max()))
    result.max_abs_error = max(result.max_abs_error, max_abs)
    result.max_rel_error = max(result.max_rel_error, max_rel)
    return True


def _first(mask: torch.Tensor) -> list[int]:
    flat = int(mask.reshape(-1).nonzero()[0].item())
    return [int(i) for i in torch.unravel_index(torch.tensor(flat), mask.shape)] if mask.dim() else []
