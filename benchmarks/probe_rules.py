r"""Re-judge the probe check (timing_rules._probe_check) on stored GPU runs with the rule in the code now.

    python benchmarks/probe_rules.py benchmarks/calibration/run8.json:call2_aa.json \
        'benchmarks/calibration/run8.json:call*_sensitivity.json'

It reads the compact calibration record (benchmarks/calibration_record.py) or a raw document just written.

Every stored probe keeps each block's wall per call, its excess, its share and its call count, so a new allowance can
be tried on old runs without a GPU. Prints, per file, how many honest probes (A/A rows, sensitivity pairs, set-aside
pairs included) the rule would call suspect, which ones, and the pooled verdict of each multi-pair run.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.calibration_record import documents
from evaluator.timing import calibration, pairs
from evaluator.timing import rules as timing_rules


def rejudge(probe: dict) -> dict:
    # Run 8's first call stored one probe block and no per-block walls or share: rebuilt from its medians.
    ref_walls = (probe.get("walls_ms") or {}).get("reference") or [probe["reference_wall_per_call_ms"]]
    share = probe.get("share_ms")
    if share is None:
        harness = max(0.0, probe["reference_wall_per_call_ms"] - probe["reference_reported_ms"])
        share = calibration.PROBE_SHARE * max(0.0, probe["candidate_wall_per_call_ms"] - harness)
    noise = timing_rules.probe_noise_ms(ref_walls, probe["calls"], "cuda")
    allowance = max(noise, share)
    return dict(
        probe,
        noise_ms=round(noise, 4),
        share_ms=round(share, 4),
        allowance_ms=round(allowance, 4),
        suspect=probe["excess_ms"] > allowance,
    )


def probes_of(doc: dict):
    """(name, [probe of each pair]) for every judged run in a stored file: A/A rows or sensitivity runs."""
    for row in doc.get("rows", []):
        probe = (row.get("crosscheck") or {}).get("probe")
        if probe:
            yield f"problem {row['id']} rep {row.get('repeat')}", [probe]
    for k, run in enumerate(doc.get("runs", [])):
        each = [p["crosscheck"] for p in run.get("pairs") or []] + [a["crosscheck"] for a in run.get("set_aside") or []]
        yield f"{run['case']} #{k}", [c["probe"] for c in each if c.get("probe")]


def main(paths: list[str]) -> None:
    total = suspect_total = 0
    for path, doc in documents(paths):
        runs = [(name, [rejudge(p) for p in probes]) for name, probes in probes_of(doc)]
        suspect = [(name, p["excess_ms"], p["allowance_ms"]) for name, probes in runs for p in probes if p["suspect"]]
        count = sum(len(probes) for _, probes in runs)
        pooled = [
            (name, pairs.probe_pooled([{"crosscheck": {"probe": p}} for p in probes], "cuda"))
            for name, probes in runs
            if len(probes) > 1
        ]
        total, suspect_total = total + count, suspect_total + len(suspect)
        print(f"{path}: {len(suspect)} of {count} probes suspect {suspect}")
        for name, verdict in pooled:
            if verdict["suspect"]:
                print(f"  pooled suspect: {name} {verdict}")
        if pooled:
            print(f"  pooled: {sum(v['suspect'] for _, v in pooled)} of {len(pooled)} multi-pair runs suspect")
    print(f"all: {suspect_total} of {total} probes suspect")


if __name__ == "__main__":
    main(sys.argv[1:])
