"""Peak fraction: the share of the hardware's ceiling a candidate reached, torch-free.

fraction = the speed-of-light floor of one call (evaluator/timing/physics.py: the bytes each rank must move over the
interconnect or the FLOPs it must do, divided by the GPU's peak rates, at the shape, dtype and W actually run) over the
candidate's median call time. 1.0 would be a kernel at the vendor-sheet peak; a fair kernel reads well below. Unlike
a speedup, it does not depend on how slow the reference is, so a weak baseline cannot inflate it.

Its interval comes from the candidate's own samples: a two-level bootstrap of the median (blocks, then the calls
within each chosen block, as stats.bootstrap_speedup_ci does for the ratio), widened by the pair's process-noise
floor (timing/rules.noise_floor), because another process pair running the same code reads a different time by that
much. With K pairs, the candidate's time is the median of the pairs' and the interval spans every pair's.

Where no floor applies (no ceilings for the device, an estimate that holds at the catalogue's defaults only, a
problem whose estimate moves no bytes), the result says why and carries no number.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from typing import Any

RESAMPLES = 1000  # the interval's resolution is far finer than its width; the speedup's bootstrap already takes 2000


def median_interval(
    blocks: Sequence[Sequence[float]], resamples: int = RESAMPLES, confidence: float = 0.95, seed: int = 1
) -> tuple[float, float]:
    """Percentile interval of the median of one side's samples under a two-level (block, then sample) bootstrap."""
    blocks = [list(b) for b in blocks if len(b)]
    if not blocks:
        raise ValueError("no samples")
    rng = random.Random(seed)
    medians = []
    for _ in range(resamples):
        sample: list[float] = []
        for _ in blocks:
            block = blocks[rng.randrange(len(blocks))]
            sample.extend(rng.choices(block, k=len(block)))
        medians.append(statistics.median(sample))
    medians.sort()
    tail = (1.0 - confidence) / 2.0
    return medians[int(tail * (resamples - 1))], medians[int((1.0 - tail) * (resamples - 1))]


def _not_applicable(reason: str) -> dict[str, Any]:
    return {"applies": False, "reason": reason}


def fraction(
    light: dict[str, Any] | None, candidate_ms: float, candidate_ci_ms: Sequence[float] | None
) -> dict[str, Any]:
    """The peak-fraction record of one timing document from its speed-of-light record (physics.check)."""
    if not light:
        return _not_applicable("no speed-of-light floor was computed for this run")
    if not light.get("applies"):
        return _not_applicable(light.get("reason") or "no speed-of-light floor applies")
    floor_ms = float(light["floor_ms"])
    if not candidate_ms or candidate_ms <= 0:
        return _not_applicable("no candidate time")
    low_ms, high_ms = candidate_ci_ms if candidate_ci_ms else (candidate_ms, candidate_ms)
    bound = "interconnect" if light.get("link_ms", 0) >= light.get("compute_ms", 0) else "compute"
    return {
        "applies": True,
        "value": round(floor_ms / candidate_ms, 6),
        "ci": [round(floor_ms / high_ms, 6), round(floor_ms / low_ms, 6)],
        "floor_ms": round(floor_ms, 6),
        "candidate_ms": round(candidate_ms, 6),
        "bound": bound,
        "ceilings": light.get("ceilings"),
    }


def for_pair(
    light: dict[str, Any] | None, cand_blocks: Sequence[Sequence[float]], candidate_ms: float, noise_floor: float
) -> tuple[list[Any] | None, dict[str, Any]]:
    """(the candidate median's widened interval in ms, the peak-fraction record) for one pair's timing document.
    The bootstrap runs only where a floor applies (it is the only reader of the interval)."""
    if not (light and light.get("applies")):
        return None, fraction(light, candidate_ms, None)
    low, high = median_interval(cand_blocks)
    interval = [round(low / (1.0 + noise_floor), 6), round(high * (1.0 + noise_floor), 6)]
    return interval, fraction(light, candidate_ms, interval)


def combined(timings: Sequence[dict[str, Any]], candidate_ms: float) -> dict[str, Any]:
    """The peak-fraction record of K combined pairs: the median candidate time, an interval spanning every pair's
    (a pair without one contributes its median)."""
    light = timings[0].get("speed_of_light") if timings else None
    if not (light and light.get("applies")):
        return fraction(light, candidate_ms, None)
    spans = [t.get("candidate_ci_ms") or [t["candidate_ms"], t["candidate_ms"]] for t in timings]
    return fraction(light, candidate_ms, [min(s[0] for s in spans), max(s[1] for s in spans)])
