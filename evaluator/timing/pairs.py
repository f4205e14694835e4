"""Timing in several fresh process pairs (``Config.pairs``), combined into one speedup and interval.

One judged run times the reference and the candidate in one pair of process groups. Identical code in two pairs
reads differently, by up to ~6% either way on an H200 at 0.01-0.3 ms references, and the bootstrap inside one pair
cannot see it. A single run must therefore widen its interval by a floor large enough
for any pair (8.3%), which hides a real 5% difference. Several pairs average that offset out: their speedups' geometric
mean has a spread that shrinks as 1/sqrt(K), so the interval can be narrower without more false "faster" verdicts.

The interval's half-width (in log units) is the largest of
- the calibrated one: ``PAIR_Z`` x ``PAIR_OFFSET_SD`` / sqrt(K), combined with the pairs' own bootstrap widths
  (averaged, / sqrt(K)); ``PAIR_OFFSET_SD`` is the spread of one pair's speedup for identical code measured by A/A;
- the empirical one: a Student t interval over the K speedups, so a problem whose pairs disagree more than the
  calibration says gets a wider interval, not a false verdict.
A pair in which either side was host-paced brings the host-bound floor back (those differ by up to ~50%).

With eight pairs, A/A runs on an H200 gave no false "faster" and 5% differences were detected; a miss was a false
cross-check flag in one pair, hence ``triage`` below. Eight pairs cost several times a one-pair judgement, so the
default ``pairs`` is 1 (the single-pair rule in evaluator/timing/rules.py) and a profile that ranks 5% differences asks
for more (HardwareProfile.timing_pairs). The numbers: docs/calibration.md, "Config.pairs".
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from evaluator.contract import verdict
from evaluator.contract.schema import HOST_PACED_FLOOR, MAX_PAIRS, ONE_PAIR_FLOOR, PAIR_OFFSET_SD, PAIR_Z  # noqa: F401
from evaluator.timing.calibration import MAX_SUSPECT_SHARE, PROBE_POOLED_FLOOR_MS


def crosscheck_suspect(timing: dict[str, Any]) -> bool:
    return bool((timing.get("crosscheck") or {}).get("suspect"))


def triage(
    timings: list[tuple[int, dict[str, Any]]], retimed: bool = False
) -> tuple[bool, list[tuple[int, dict[str, Any]]], list[dict[str, Any]]]:
    """(flagged, pairs to combine, pairs set aside) from (pair number, timing) of every pair that ran. ``retimed``:
    a one-pair judgement whose suspect pair was timed once more (evaluation._more_pairs), flagged only if every try was
    suspect; the try that was not is the timing."""
    suspect = [(k, t) for k, t in timings if crosscheck_suspect(t)]
    if (len(suspect) == len(timings)) if retimed else (len(suspect) > MAX_SUSPECT_SHARE * len(timings)):
        return True, timings, []
    # Kept whole (speedup and cross-check), so that a stored run says what was set aside and why.
    aside = [
        {
            "pair": k,
            "unexplained_ms": t["crosscheck"].get("unexplained_ms"),
            "allowance_ms": t["crosscheck"].get("allowance_ms"),
            "speedup": t.get("speedup"),
            "crosscheck": t["crosscheck"],
        }
        for k, t in suspect
    ]
    return False, [(k, t) for k, t in timings if not crosscheck_suspect(t)], aside


def probe_pooled(timings: list[dict[str, Any]], device: str = "cuda") -> dict[str, Any] | None:
    """The probe check (rules._probe_check) over K pairs: the mean excess of every pair that ran (set-aside ones too:
    hiding work in some pairs must not lower the mean), held to the median of the pairs' noise allowances / sqrt(K)
    but at least PROBE_POOLED_FLOOR_MS, or to the median of their shares of the call when that is larger. None when
    no pair had probe blocks."""
    probes = [t["crosscheck"]["probe"] for t in timings if (t.get("crosscheck") or {}).get("probe")]
    if not probes:
        return None
    K = len(probes)
    mean = statistics.fmean(p["excess_ms"] for p in probes)
    noise = max(PROBE_POOLED_FLOOR_MS[device], statistics.median(p["noise_ms"] for p in probes) / math.sqrt(K))
    allowance = max(noise, statistics.median(p["share_ms"] for p in probes))
    return {
        "pairs": K,
        "mean_excess_ms": round(mean, 4),
        "allowance_ms": round(allowance, 4),
        "suspect": bool(mean > allowance),
    }


# Two-sided 95% Student t quantiles by degrees of freedom (K - 1).
_T95 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    11: 2.201,
    12: 2.179,
    13: 2.160,
    14: 2.145,
    15: 2.131,
}


def widen(low: float, high: float, floor: float) -> tuple[float, float]:
    """An interval widened by a relative ``floor`` each way: what a pair's offset may add to what was measured."""
    return low / (1.0 + floor), high * (1.0 + floor)


def interval(
    timings: list[dict[str, Any]], device: str, host_bound_floor: float
) -> tuple[float, float, float, float, float]:
    """(mean log speedup, low, high, calibrated half-width, empirical half-width) of K >= 2 pairs, from each pair's
    ``speedup``, ``bootstrap_ci`` and ``host_bound`` alone, so that stored A/A runs can be re-judged
    (benchmarks/aa_rules.py)."""
    K = len(timings)
    logs = [math.log(t["speedup"]) for t in timings]
    mean = statistics.fmean(logs)
    boot = statistics.fmean((math.log(t["bootstrap_ci"][1]) - math.log(t["bootstrap_ci"][0])) / 2 for t in timings)
    calibrated = math.hypot(PAIR_Z * PAIR_OFFSET_SD[device], boot) / math.sqrt(K)
    empirical = _T95.get(K - 1, 2.0) * statistics.stdev(logs) / math.sqrt(K)
    half = max(calibrated, empirical)
    low, high = math.exp(mean - half), math.exp(mean + half)
    if any(t.get("host_bound") for t in timings):
        low, high = widen(low, high, host_bound_floor)
    return mean, low, high, calibrated, empirical


def combine(
    timings: list[dict[str, Any]],
    device: str,
    host_bound_floor: float,
    dropped: list[Any] | None = None,
    set_aside: list[Any] | None = None,
) -> dict[str, Any]:
    """K >= 2 pairs' timing documents combined and read alone: combine_evidence's document decided (verdict.decide)
    with no flag; the judge combines with combine_evidence and decides once, with the result's flags."""
    return verdict.decide(combine_evidence(timings, device, host_bound_floor, dropped, set_aside), (), device)


def combine_evidence(
    timings: list[dict[str, Any]],
    device: str,
    host_bound_floor: float,
    dropped: list[Any] | None = None,
    set_aside: list[Any] | None = None,
) -> dict[str, Any]:
    """One timing document from K >= 2 single-pair documents (rules.pair_evidence's, in pair order), with no verdict
    yet (verdict.decide sets ``faster`` and ``ranked``)."""
    K = len(timings)
    if K < 2:
        raise ValueError("combining needs at least two pairs")
    mean, low, high, calibrated, empirical = interval(timings, device, host_bound_floor)
    host_bound = any(t.get("host_bound") for t in timings)
    first = timings[0]
    doc = {k: v for k, v in first.items() if k not in ("faster", "ranked")}  # a pair's verdict is not evidence
    doc.update(
        reference_ms=round(statistics.median(t["reference_ms"] for t in timings), 6),
        candidate_ms=round(statistics.median(t["candidate_ms"] for t in timings), 6),
        speedup=round(math.exp(mean), 4),
        speedup_ci=[round(low, 4), round(high, 4)],
        **{verdict.LOW_KEY: low},
        # A flag in any pair is the judge's to apply (verdict.conclude); a pair whose reference blocks timed its host
        # (rules.pair_evidence) withholds "faster" here as it does alone (verdict.reference_timed_its_host).
        reference_blocks_spun_short=[],  # per pair, in ``reference_spun_short_pairs`` and ``pairs.each``
        reference_spun_short_pairs=[k for k, t in enumerate(timings, 1) if t.get("reference_blocks_spun_short")],
        bootstrap_ci=None,
        process_noise_floor=None,
        host_bound=host_bound,
        samples=sum(t["samples"] for t in timings),
        reference_samples=sum(t["reference_samples"] for t in timings),
        blocks=sum(t["blocks"] for t in timings),
        pairs={
            "count": K,
            "offset_sd": PAIR_OFFSET_SD[device],
            "z": PAIR_Z,
            "half_width": {"calibrated": round(calibrated, 5), "empirical": round(empirical, 5)},
            "each": [
                {
                    "speedup": t["speedup"],
                    "bootstrap_ci": t["bootstrap_ci"],
                    "reference_ms": t["reference_ms"],
                    "candidate_ms": t["candidate_ms"],
                    "host_bound": t.get("host_bound"),
                    "reference_blocks_spun_short": t.get("reference_blocks_spun_short") or [],
                    "crosscheck": t.get("crosscheck"),
                }
                for t in timings
            ],
            "dropped": list(dropped or []),
            "set_aside": list(set_aside or []),
        },
    )
    from evaluator.timing import peak  # the peak fraction of the combined time, not the first pair's (timing/peak.py)

    doc.update(candidate_ci_ms=None, peak_fraction=peak.combined(timings, doc["candidate_ms"]))
    return doc
