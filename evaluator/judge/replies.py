"""Reading what rank processes reply to a timing command: numbers checked before use (a candidate's rank may lie about
its own figures, and a malformed reply is its fault, ``_Stop``)."""

from __future__ import annotations

import math
from typing import Any

from evaluator.contract import schema
from evaluator.timing.calibration import SPIN_MAX_US


class _Stop(Exception):
    def __init__(self, verdict: str, message: str, reference_command: dict | None = None):
        super().__init__(message)
        self.verdict, self.message = verdict, message
        self.reference_command = reference_command
        self.unjudged: str | None = None  # the hidden check this infra_error kept from being judged, if any

    def as_result(self) -> dict:
        out: dict[str, Any] = {"verdict": self.verdict, "message": self.message}
        if self.reference_command is not None:
            out["_reference_failed"] = self.reference_command
        if self.unjudged is not None:
            out["_unjudged"] = self.unjudged
        return out


def _is_number(value) -> bool:
    """A finite int or float, not a bool: what a rank's numeric reply fields must be."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _share(value) -> float:
    """A rank's reported share of calls, or 0.0 when it is not a number in [0, 1] (a candidate's rank may say
    anything; the value is shown, never used for a verdict)."""
    return float(value) if _is_number(value) and 0.0 <= value <= 1.0 else 0.0


def _reported(values: list, side: str, what: str, valid=lambda v: True) -> list:
    """The ranks' values of one reply field; any that is not a number (or not ``valid``) makes the reply malformed:
    the candidate's fault on its side (as malformed samples are, _samples), never an infra_error it could cause at
    will."""
    if not all(_is_number(v) and valid(v) for v in values):
        raise _Stop(
            schema.INFRA_ERROR if side == "ref" else schema.RUNTIME_ERROR, f"{side} ranks returned a malformed {what}"
        )
    return values


def _call_ms(replies: list[dict], side: str) -> float:
    """The slowest rank's call time in a trial reply, a number >= 0."""
    return float(max(_reported([x.get("ms", 0.0) for x in replies], side, "trial time", lambda v: v >= 0)))


def _host_share(replies: list[dict], side: str) -> float:
    """The largest share of host-paced calls a side's ranks report, clamped to [0, 1]."""
    return min(1.0, max(0.0, max(_reported([x.get("host_bound") or 0.0 for x in replies], side, "host-bound share"))))


def _spin_wanted(replies: list[dict]) -> float:
    """The longest spin a side's ranks asked for (their host time to queue a call), within the ranks' own cap;
    anything that is not a finite number counts as no wish."""
    wishes = [x.get("spin_wanted_us") for x in replies]
    valid = [float(w) for w in wishes if isinstance(w, (int, float)) and math.isfinite(w) and w > 0]
    return min(SPIN_MAX_US, max(valid, default=0.0))


def _samples(replies: list[dict], iters: int, side: str) -> list[float]:
    samples = replies[0].get("samples")
    if not isinstance(samples, list) or len(samples) != iters or not all(isinstance(x, (int, float)) for x in samples):
        raise _Stop(
            schema.INFRA_ERROR if side == "ref" else schema.RUNTIME_ERROR,
            f"{side} rank 0 returned malformed timing samples",
        )
    if any(not (x >= 0.0) or x == float("inf") for x in samples):
        raise _Stop(schema.INFRA_ERROR if side == "ref" else schema.RUNTIME_ERROR, f"{side} reported negative times")
    return [float(x) for x in samples]
