"""The speed-of-light floor: no correct implementation can beat the hardware's peak rates.

Each problem states (``Problem.light``) the bytes each rank must move over the GPU interconnect and the FLOPs it must
perform. Divided by the GPU's peak rates, the larger of the two is the least time one call can take; a measured
candidate time below it did not do the work inside its timed window (or forged its clock), and the result is flagged
``faster_than_light`` and never ranked. The ceilings are peak, vendor-sheet numbers (unreachable in practice), so an
honest kernel is never flagged by a correct estimate.

The catalogue's estimates hold at the default shapes only (M = N = 1024, bfloat16, W = 8); at other shapes the
floor applies only to problems with a ``speed_of_light`` formula, and it is skipped otherwise. CPU timings are never
ranked and get no floor (unless ``ceilings`` are given explicitly, which the tests use).
"""

from __future__ import annotations

from typing import Any

# The NVIDIA H200 SXM peaks (their sources beside them): the contract's, which the feedback text states too.
from evaluator.contract.hardware import H200_CEILINGS as H200

DEFAULTS = {"M": 1024, "N": 1024, "W": 8, "dtype": "bfloat16"}
_DTYPES = ("bfloat16", "float16", "float32")  # the dtypes a problem's estimate is asked at; any other: bfloat16


def ceilings_for(device: str, gpu_names: list[Any] | None = None) -> dict[str, Any] | None:
    """Peak rates of the host's GPUs, if known (H200 and H100 share the interconnect; H100's HBM is slower)."""
    if device != "cuda":
        return None
    names = " ".join(gpu_names or [])
    if not names or "H200" in names or "H100" in names:
        return dict(H200, name=names or H200["name"])
    return None  # unknown GPU: no floor rather than a wrong one


def floor(problem: Any, M: int, N: int, W: int, dtype: str, ceilings: dict[str, Any] | None) -> dict[str, Any]:
    """The least time one call can take, in ms, with how it was derived; ``applies`` False (and why) if none."""
    if not ceilings:
        return {"applies": False, "reason": "no peak rates for this device (CPU timings are never ranked)"}
    import torch  # the problem's estimate takes a torch dtype; the rules themselves stay torch-free

    try:
        light = problem.light(M, N, W, getattr(torch, dtype) if dtype in _DTYPES else torch.bfloat16)
    except Exception as exc:  # noqa: BLE001 - a broken estimate must not fail a job
        return {"applies": False, "reason": f"speed-of-light estimate failed: {type(exc).__name__}: {exc}"}
    at_defaults = (M, N, W, dtype) == (DEFAULTS["M"], DEFAULTS["N"], DEFAULTS["W"], DEFAULTS["dtype"])
    if light.get("at_defaults_only") and not at_defaults and not ceilings.get("any_shape"):
        return {"applies": False, "reason": "the catalogue's estimate holds at M=N=1024, bf16, W=8 only"}
    moved = float(light.get("bytes_per_rank") or 0)
    flops = float(light.get("flops_per_rank") or 0)
    link_ms = moved / ceilings["link_bytes_per_s"] * 1e3 if moved and W > 1 else 0.0
    compute_ms = flops / ceilings["flops_per_s"] * 1e3 if flops else 0.0
    floor_ms = max(link_ms, compute_ms)
    if floor_ms <= 0:
        return {"applies": False, "reason": "the estimate moves no bytes and does no FLOPs"}
    return {
        "applies": True,
        "floor_ms": floor_ms,
        "link_ms": link_ms,
        "compute_ms": compute_ms,
        "bytes_per_rank": moved,
        "flops_per_rank": flops,
        "ceilings": ceilings.get("name", "custom"),
    }


def check(
    problem: Any, M: int, N: int, W: int, dtype: str, candidate_ms: float, ceilings: dict[str, Any] | None
) -> dict[str, Any]:
    """``floor`` plus ``violated``: the candidate's median time is below the least possible time."""
    out = floor(problem, M, N, W, dtype, ceilings)
    out["violated"] = bool(out["applies"] and candidate_ms < out["floor_ms"])
    for key in ("floor_ms", "link_ms", "compute_ms"):
        if key in out:
            out[key] = round(out[key], 6)
    return out
