"""THE decision of "faster" and "ranked": the one place that sets them on a timing record.

Everything else only gathers evidence: rules.py one pair's interval, its flags (cross-check, probe, speed of light)
and the reference blocks that timed its host; pairs.py the interval of K pairs and the pairs whose reference timed
its host; the judge the result's flags (dtype, sandbox, the pairs' triage). The judge decides once, when an
evaluation ends (evaluation.evaluate, selfcheck), with every flag the result carries; rules._timing_document and
pairs.combine, read alone (tests, benchmarks), decide their own record with the flags they know of.

The rule:
- ``faster``: the whole widened interval lies above 1.0, the record carries no flag, and no reference block timed
  its host (the reference read slower than it is there: docs/calibration.md, SPIN_SHORT_BLOCK_SHARE);
- ``ranked``: timed on a GPU (CPU timings are wall clock on a shared host) and the record carries no flag.
Torch-free, standard library only.
"""
from __future__ import annotations

from typing import Iterable, Optional

# The interval's lower bound as computed, before ``speedup_ci`` rounds it to 4 places: "faster" compares this one,
# so that a bound of 1.00003 (shown as 1.0) is decided as it always was. Private (leading "_"): decide() removes it.
LOW_KEY = "_speedup_low"


def is_faster(low: Optional[float], flagged: bool, reference_timed_its_host: bool) -> bool:
    """Whether an interval whose lower bound is ``low`` makes a candidate faster."""
    return bool(low is not None and low > 1.0 and not flagged and not reference_timed_its_host)


def is_ranked(device: Optional[str], flagged: bool) -> bool:
    """Whether a timing may rank: GPU timings (CUDA events) only, and never a flagged one."""
    return bool(device == "cuda" and not flagged)


def reference_timed_its_host(timing: dict) -> bool:
    """Whether a reference block of the record (one pair's, or any of K pairs') timed its host, not its kernels."""
    return bool(timing.get("reference_blocks_spun_short") or timing.get("reference_spun_short_pairs"))


def decide(timing: dict, flags: Iterable[str], device: Optional[str]) -> dict:
    """Set ``faster`` and ``ranked`` on ``timing`` (returned) from its evidence: the interval's lower bound (exact,
    :data:`LOW_KEY`, else ``speedup_ci``), the reference's spun-short blocks, and ``flags``, every flag that applies
    (a flag of any kind withholds both)."""
    low = timing.pop(LOW_KEY, None)
    if low is None:
        low = (timing.get("speedup_ci") or [None])[0]
    flagged = any(True for _ in flags or ())
    timing["faster"] = is_faster(low, flagged, reference_timed_its_host(timing))
    timing["ranked"] = is_ranked(device, flagged)
    return timing


def conclude(result: dict, device: Optional[str]) -> dict:
    """The end of an evaluation: the result's timing (if any) decided with every flag the result carries."""
    if result.get("timing"):
        decide(result["timing"], result.get("flags") or (), device)
    return result
