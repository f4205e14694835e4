"""THE decision of "faster" and "ranked": the one place that sets them on a timing record.

Everything else only gathers evidence: timing/rules.py one pair's interval, its flags (cross-check, probe, speed of
light) and the reference blocks that timed its host; timing/pairs.py the interval of K pairs and the pairs whose
reference timed its host; the judge the result's flags (dtype, sandbox, the pairs' triage). The judge decides once,
when an evaluation ends (evaluation.evaluate, selfcheck), with every flag the result carries; rules._timing_document
and pairs.combine, read alone (tests, benchmarks), decide their own record with the flags they know of.

The rule:
- ``faster``: the whole widened interval lies above 1.0, the record carries no flag, and no reference block timed
  its host (the reference read slower than it is there: docs/calibration.md, SPIN_SHORT_BLOCK_SHARE);
- ``faster_at``: "faster at p" for each bar of :data:`BARS` (fast_p's bars): faster, and the lower bound above p
  (so never where ``faster`` is withheld: fast_p <= fast_1.0 always);
- ``ranked``: timed on a GPU (CPU timings are wall clock on a shared host) and the record carries no flag.
Torch-free, standard library only: part of the contract (evaluator/contract/schema.py re-exports ``faster_at`` and the
bars for the site, which decides nothing itself), beside the timing rulebook (evaluator/timing/) that gathers its
evidence.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# The interval's lower bound as computed, before ``speedup_ci`` rounds it to 4 places: "faster" compares this one,
# so that a bound of 1.00003 (shown as 1.0) is decided as it always was. Private (leading "_"): decide() removes it.
LOW_KEY = "_speedup_low"


def is_faster(low: float | None, flagged: bool, reference_timed_its_host: bool) -> bool:
    """Whether an interval whose lower bound is ``low`` makes a candidate faster."""
    return bool(low is not None and low > 1.0 and not flagged and not reference_timed_its_host)


# The bars of fast_p (the leaderboard's fast_1.0, fast_1.5 and fast_2.0), and their keys in ``faster_at``.
BARS = (1.0, 1.5, 2.0)


def bar_key(p: float) -> str:
    return f"{p:.1f}"


def is_faster_at(low: float | None, p: float, flagged: bool, reference_timed_its_host: bool) -> bool:
    """Whether the interval makes a candidate faster by more than ``p`` times: faster (the same withholding), and
    the lower bound above ``p``. At p = 1.0 this is :func:`is_faster`."""
    return low is not None and is_faster(low, flagged, reference_timed_its_host) and low > p


def faster_at(timing: dict[str, Any] | None) -> dict[str, Any]:
    """The judge's "faster at p" of a decided timing record, one bool per bar of :data:`BARS`. A record decided before
    the judge wrote ``faster_at`` falls back to its stored ``faster`` (which carries every withholding) and its
    interval's lower bound; nothing where there is no record."""
    timing = timing if isinstance(timing, dict) else {}
    stored = timing.get("faster_at")
    if isinstance(stored, dict):
        return {bar_key(p): bool(stored.get(bar_key(p))) for p in BARS}
    low = (timing.get("speedup_ci") or [None])[0]
    faster = bool(timing.get("faster")) and isinstance(low, (int, float)) and not isinstance(low, bool)
    return {bar_key(p): bool(faster and low > p) for p in BARS}


def is_ranked(device: str | None, flagged: bool) -> bool:
    """Whether a timing may rank: GPU timings (CUDA events) only, and never a flagged one."""
    return bool(device == "cuda" and not flagged)


def reference_timed_its_host(timing: dict[str, Any]) -> bool:
    """Whether a reference block of the record (one pair's, or any of K pairs') timed its host, not its kernels."""
    return bool(timing.get("reference_blocks_spun_short") or timing.get("reference_spun_short_pairs"))


def decide(timing: dict[str, Any], flags: Iterable[str], device: str | None) -> dict[str, Any]:
    """Set ``faster`` and ``ranked`` on ``timing`` (returned) from its evidence: the interval's lower bound (exact,
    :data:`LOW_KEY`, else ``speedup_ci``), the reference's spun-short blocks, and ``flags``, every flag that applies
    (a flag of any kind withholds both)."""
    low = timing.pop(LOW_KEY, None)
    if low is None:
        low = (timing.get("speedup_ci") or [None])[0]
    flagged = any(True for _ in flags or ())
    host = reference_timed_its_host(timing)
    timing["faster"] = is_faster(low, flagged, host)
    timing["faster_at"] = {bar_key(p): is_faster_at(low, p, flagged, host) for p in BARS}
    timing["ranked"] = is_ranked(device, flagged)
    return timing


def conclude(result: dict[str, Any], device: str | None) -> dict[str, Any]:
    """The end of an evaluation: the result's timing (if any) decided with every flag the result carries."""
    if result.get("timing"):
        decide(result["timing"], result.get("flags") or (), device)
    return result
