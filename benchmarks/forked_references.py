"""Trusted ranks forked from the judge's fork server (evaluator/process/forkserver.py) against fresh processes, side by
side in one run: each round runs ``pkb eval`` once each way (the order alternating round by round) and records the
command's wall time, the judge's start phase (both groups started and ready), the verdict, and the reference's and
candidate's timed medians.

    python benchmarks/forked_references.py PROBLEM CANDIDATE [-W 2] [--device cpu] [--rounds 5] [--json OUT] [EVAL ARGS]

Anything after the known options goes to ``pkb eval`` as it is (--trials, --M, --reduced ...). The ratios printed are
forked / fresh of the medians: below 1.0 for the wall time is the point of the server; the reference's timed median
should not move (a forked reference must time like a fresh one).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODES = {"fresh": "0", "forked": "1"}


def run_once(mode: str, args, extra: list, out: str) -> dict:
    env = dict(os.environ, PKB_REFERENCE_FORKS=MODES[mode])
    command = [
        sys.executable,
        "-m",
        "evaluator",
        "eval",
        str(args.problem),
        args.candidate,
        "-W",
        str(args.W),
        "--device",
        args.device,
        "--json",
        out,
    ] + extra
    began = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - began
    try:
        with open(out) as f:
            result = json.load(f)
    except (OSError, ValueError):
        result = {"verdict": f"no result (rc {done.returncode}): {done.stderr[-300:]}"}
    timing = result.get("timing") or {}
    return {
        "mode": mode,
        "wall_s": round(wall, 2),
        "start_s": (result.get("phases_s") or {}).get("start"),
        "verdict": result.get("verdict"),
        "reference_ms": timing.get("reference_ms"),
        "candidate_ms": timing.get("candidate_ms"),
    }


def median(rows: list, key: str):
    values = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
    return statistics.median(values) if values else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("problem")
    parser.add_argument("candidate")
    parser.add_argument("-W", type=int, default=2)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", dest="json_out")
    args, extra = parser.parse_known_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            order = ["fresh", "forked"] if i % 2 == 0 else ["forked", "fresh"]
            for mode in order:
                row = run_once(mode, args, extra, os.path.join(tmp, f"{i}-{mode}.json"))
                rows.append(dict(row, round=i))
                print(
                    f"round {i} {mode:6s} wall {row['wall_s']:7.2f} s  start {row['start_s']} s  {row['verdict']}  "
                    f"reference {row['reference_ms']} ms  candidate {row['candidate_ms']} ms",
                    flush=True,
                )
    summary = {
        "problem": args.problem,
        "candidate": args.candidate,
        "W": args.W,
        "device": args.device,
        "rounds": args.rounds,
        "eval_args": extra,
        "rows": rows,
    }
    for key in ("wall_s", "start_s", "reference_ms", "candidate_ms"):
        fresh = median([r for r in rows if r["mode"] == "fresh"], key)
        forked = median([r for r in rows if r["mode"] == "forked"], key)
        ratio = forked / fresh if fresh and forked is not None else None
        summary[key] = {"fresh": fresh, "forked": forked, "forked_over_fresh": ratio}
        print(
            f"median {key}: fresh {fresh}, forked {forked}, forked/fresh {'n/a' if ratio is None else f'{ratio:.3f}'}"
        )
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(summary, f, indent=1)
    return 0 if all(r["verdict"] == "correct" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
