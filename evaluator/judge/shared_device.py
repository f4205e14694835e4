"""Shared-device worlds, the judge's side: W ranks of each group on one GPU (``pkb eval ... --shared-device``).

A host with fewer GPUs than ranks can still run a candidate's multi-rank CUDA logic: every rank of both groups on
one GPU of the judge's device set, the process group on gloo with CUDA tensors staged through host memory
(evaluator/rank/gloo_compat.py), symmetric memory allowed to overlap (evaluator/rank/shared_device.py). What such a
run proves and what it does not is part of every result it produces (:func:`label`): it is correctness only, never
timed (evaluator/judge/config.py refuses timing), never ranked and never faster.
"""

from __future__ import annotations

import contextlib
import os

from evaluator.contract import schema

ENVIRONMENT_KEY = "shared_device"

PROVES = (
    "shared-device world (every rank on one GPU, gloo process group): it shows the candidate's multi-rank "
    "logic is correct on CUDA; it does not exercise NVLink transfers or NCCL itself, and it times nothing"
)

TIMEOUT_NOTE = (
    "in a shared-device world the ranks take turns on one GPU, so a rank spinning on a peer's flag "
    "waits for the peer's time slice; a kernel that needs its peers resident at once never finishes here"
)


def first_device(visible: str | None) -> str:
    """The one GPU of a device set (``CUDA_VISIBLE_DEVICES`` as a worker pinned it, or unset: device 0) that a
    shared world runs on."""
    entries = [e.strip() for e in (visible or "").split(",") if e.strip()]
    return entries[0] if entries else "0"


@contextlib.contextmanager
def one_device(shared: bool):
    """While judging a shared world: ``CUDA_VISIBLE_DEVICES`` narrowed to the first GPU of the judge's set, so that
    every rank the judge starts (they inherit it) sees one device and shares it. Restored afterwards."""
    if not shared:
        yield
        return
    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = first_device(before)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = before


def label(result: dict, shared: bool) -> dict:
    """Mark a shared world's result, whatever its verdict: ``environment.shared_device``, the never-ranked flag, and a
    message that says what the run proves and what it does not. Its timing (there is none: config refuses it) is
    dropped if any came, so nothing of it can read as a speed."""
    if not shared:
        return result
    result["environment"] = dict(result.get("environment") or {}, **{ENVIRONMENT_KEY: True})
    result["flags"] = sorted(set(result.get("flags") or []) | {schema.FLAG_SHARED_DEVICE})
    result["timing"] = None
    message = result.get("message") or ""
    if result.get("verdict") == schema.TIMEOUT:
        message = f"{message} ({TIMEOUT_NOTE})" if message else TIMEOUT_NOTE
    result["message"] = f"{message} [{PROVES}]" if message else PROVES[0].upper() + PROVES[1:]
    return result
