r"""Re-judge stored A/A runs (``judge_gpu.py aa --out``) and sensitivity runs (``sensitivity --out``) under the interval
and cross-check rules in force now.

    python benchmarks/aa_rules.py 'benchmarks/calibration/run5.json:aa_*.json' \
        'benchmarks/calibration/run6.json:sensitivity_*.json'

It reads the compact calibration record (benchmarks/calibration_record.py) or a raw document just written.

With several sensitivity files it also pools their counts and prints each rate's exact one-sided 95% lower bound;
for A/A files, the spread of the stored speedups.

A rule chosen from some runs is tested on others: this reads the raw numbers each run kept (one pair's bootstrap
interval, or every pair's speedup and interval) and applies today's ``timing_rules.noise_floor`` and
``pairs.interval`` to them, so a change of constant shows at once what it does to every recorded A/A run. Nothing here
times anything.
"""

from __future__ import annotations

import json
import math
import pathlib
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks.calibration_record import documents
from evaluator.contract import verdict
from evaluator.timing import calibration, pairs
from evaluator.timing import rules as timing_rules


def _reference_spun_short(row: dict) -> bool:
    """Whether a stored row's reference had a block that timed its host (timing_rules._timing_document withholds
    "faster" then); rows stored before GPU run 10 kept no per-block shares and count as not."""
    return bool(timing_rules.blocks_spun_short((row.get("spin_short_per_block") or {}).get("reference")))


def rejudge(row: dict, device: str = "cuda") -> dict:
    """Today's interval for one stored A/A row; ``None`` when the row kept no timing."""
    each = row.get("pairs")
    if each and len(each) > 1:
        mean, low, high, _, _ = pairs.interval(each, device, calibration.HOST_BOUND_NOISE_FLOOR)
        return {
            "pairs": len(each),
            "speedup": math.exp(mean),
            "low": low,
            "high": high,
            "host_bound": any(p.get("host_bound") for p in each),
            "withheld": _reference_spun_short(row),
        }
    raw = row.get("bootstrap_ci")
    if not raw or row.get("speedup") is None:
        return None
    low, high = pairs.widen(raw[0], raw[1], timing_rules.noise_floor(device, bool(row.get("host_bound"))))
    return {
        "pairs": 1,
        "speedup": row["speedup"],
        "low": low,
        "high": high,
        "host_bound": bool(row.get("host_bound")),
        "withheld": _reference_spun_short(row),
    }


def summarise(rows: list[dict]) -> dict:
    judged = [r for r in (rejudge(row) for row in rows) if r]
    gpu = [r for r in judged if not r["host_bound"]]
    return {
        "runs": len(judged),
        "gpu_paced": len(gpu),
        "host_bound": len(judged) - len(gpu),
        "false_faster": sum(verdict.is_faster(r["low"], False, r["withheld"]) for r in judged),
        "faster_withheld": sum(r["low"] > 1.0 and r["withheld"] for r in judged),
        "missing_1": sum(not r["low"] <= 1.0 <= r["high"] for r in judged),
        "gpu_paced_offset_max": round(max((abs(math.log(r["speedup"])) for r in gpu), default=0.0), 4),
        "median_half_width": round(statistics.median(math.log(r["high"] / r["low"]) / 2 for r in judged), 4)
        if judged
        else None,
    }


def rejudge_probe(run: dict) -> dict:
    """Today's verdict for one stored sensitivity run: its pairs triaged on their cross-checks (pairs.triage), then
    combined. A run whose first pair was flagged, under the rule then in force, timed no more pairs: not
    re-judgeable."""
    each = run.get("pairs")
    if not each or not all("crosscheck" in p for p in each):
        return {"rejudged": False}
    # Runs stored from run 7 on also keep the pairs the judge set aside (their speedup and cross-check, not their
    # bootstrap interval): they count in the triage again, and only pairs with an interval are combined.
    aside = [(a["pair"], a) for a in run.get("set_aside") or [] if "crosscheck" in a]
    ran = list(enumerate(each, 1)) + aside  # the combined pairs' numbers are not stored; only counts come out
    flagged, combined, _ = pairs.triage(ran)
    kept = [p for _, p in combined if p.get("bootstrap_ci")]
    again = rejudge(dict(kept[0], pairs=kept))  # K pairs combined, or the one left with its one-pair floor
    slower = run["case"].endswith("slower")
    # "Faster" as the judge decides it (verdict.is_faster), the reference's spun-short blocks aside as they always were
    # here: a sensitivity run asks whether the interval found the difference.
    detected = again["high"] < 1.0 if slower else verdict.is_faster(again["low"], flagged, False)
    return {"rejudged": True, "detected": detected, "flagged": flagged, "set_aside": len(ran) - len(combined)}


def summarise_probes(runs: list[dict]) -> dict:
    out = {}
    for case in sorted({r["case"] for r in runs}):
        judged = [j for j in (rejudge_probe(r) for r in runs if r["case"] == case) if j["rejudged"]]
        out[case] = {
            "runs": sum(r["case"] == case for r in runs),
            "rejudged": len(judged),
            "detected": sum(j["detected"] for j in judged),
            "flagged": sum(j["flagged"] for j in judged),
            "pairs_set_aside": sum(j["set_aside"] for j in judged),
        }
    return out


def lower_bound(detected: int, runs: int, confidence: float = 0.95) -> float:
    """Exact (Clopper-Pearson) one-sided lower confidence bound on a detection rate seen ``detected`` times in
    ``runs``: the rate below which so many detections would be rarer than 1 - ``confidence``. For ``runs`` of
    ``runs`` it is (1 - confidence) ** (1 / runs), so 59 straight detections are what shows >= 95%."""
    if detected <= 0:
        return 0.0
    alpha = 1.0 - confidence

    def at_least(p: float) -> float:  # P(X >= detected) for X ~ Binomial(runs, p): rises with p
        return sum(math.comb(runs, k) * p**k * (1 - p) ** (runs - k) for k in range(detected, runs + 1))

    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if at_least(mid) < alpha else (low, mid)
    return low


def pool_probes(summaries: list[dict]) -> dict:
    """Every sensitivity file's re-judged counts (``summarise_probes``) added up per case, with the rate's bound."""
    out: dict = {}
    for summary in summaries:
        for case, counts in summary.items():
            into = out.setdefault(case, dict.fromkeys(counts, 0))
            for key, value in counts.items():
                into[key] += value
    for counts in out.values():
        counts["rate_lower_bound_95"] = round(lower_bound(counts["detected"], counts["rejudged"]), 4)
    return out


def aa_spread(rows: list[dict]) -> dict:
    """The stored A/A speedups' spread: median and 5th-95th percentiles (nearest rank), and the range of the
    GPU-paced and host-bound runs apart."""

    def pct(values: list[float], q: float) -> float:
        return values[round(q * (len(values) - 1))]

    def span(values: list[float]) -> list:
        return [round(values[0], 4), round(values[-1], 4)] if values else []

    timed = sorted((r for r in rows if r.get("speedup") is not None), key=lambda r: r["speedup"])
    every = [r["speedup"] for r in timed]
    gpu = [r["speedup"] for r in timed if not r.get("host_bound")]
    host = [r["speedup"] for r in timed if r.get("host_bound")]
    if not every:
        return {}
    return {
        "median": round(statistics.median(every), 4),
        "p5_p95": [round(pct(every, 0.05), 4), round(pct(every, 0.95), 4)],
        "gpu_paced_range": span(gpu),
        "host_bound_range": span(host),
    }


def main(paths: list[str]) -> int:
    print(
        f"rules: one pair widened by {calibration.PROCESS_NOISE_FLOOR['cuda']:.2%} (host-bound "
        f"{calibration.HOST_BOUND_NOISE_FLOOR:.0%}); "
        f"pairs: offset SD {pairs.PAIR_OFFSET_SD['cuda']}, z {pairs.PAIR_Z}"
    )
    probes = []
    for path, doc in documents(paths):
        if "rows" in doc:
            print(path, json.dumps(dict(summarise(doc["rows"]), spread=aa_spread(doc["rows"]))))
        else:
            probes.append(summarise_probes(doc["runs"]))
            print(path, json.dumps(probes[-1]))
    if len(probes) > 1:
        print("sensitivity files pooled:", json.dumps(pool_probes(probes)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
