"""The cost of the sandbox's box, measured side by side in one run: the whole box (control group with its freezer,
pid namespace and init, bounded tmpfs) against the same sandbox with the control group taken away, which pauses the
candidate the way the judge did before the box (SIGSTOP to its process groups, then passes over its uid's processes).

For each mode, interleaved (box, signals, box, signals, ...) so that a drift of the machine hits both alike:
- set-up: constructing and closing a Sandbox (box id, control group, tmpfs, init and namespaces), median of --setups;
- a whole job: ``judge.evaluate`` of an honest candidate with timing on (--jobs of them): its wall, the candidate's
  pause (freeze or SIGSTOP passes) and resume as the judge saw them, and the timed medians of both sides, so the
  overhead a frozen candidate puts on the reference's timing shows beside the one of a stopped candidate.

    python benchmarks/box_cost.py [-W 2] [--device cpu] [--jobs 6] [--setups 10] [--candidate PATH] [--json OUT]
"""

import argparse
import json
import pathlib
import statistics
import sys
import time
from unittest import mock

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from evaluator import judge
from evaluator.process import cgroups, sandbox

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "tests/redteam/candidates/honest_allreduce.py"


def _no_cgroup(*args, **kwargs):
    raise cgroups.CgroupUnavailable("taken away by benchmarks/box_cost.py (the signals mode)")


def _mode(name: str):
    return (
        mock.patch.object(cgroups, "BoxCgroup", _no_cgroup)
        if name == "signals"
        else mock.patch.object(cgroups, "BoxCgroup", cgroups.BoxCgroup)
    )


def _setup_s(world_size: int) -> float:
    began = time.monotonic()
    box = sandbox.Sandbox(enabled=True, required=False, world_size=world_size)
    box.close()
    return time.monotonic() - began


def _job(args) -> dict:
    shape = dict(M=args.M, N=args.N) if args.device == "cpu" else {}
    began = time.monotonic()
    result = judge.evaluate(
        args.problem,
        args.candidate,
        args.world_size,
        args.device,
        trials=2,
        timing=True,
        timing_budget_ms=args.budget_ms,
        **shape,
    )
    wall = time.monotonic() - began
    notes = (result.get("environment") or {}).get("sandbox") or {}
    timing = result.get("timing") or {}
    return {
        "verdict": result["verdict"],
        "wall_s": wall,
        "pauses": notes.get("pauses") or {},
        "reference_ms": timing.get("reference_ms"),
        "candidate_ms": timing.get("candidate_ms"),
        "speedup": timing.get("speedup"),
        "complete": notes.get("complete"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-W", "--world-size", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--problem", default="1")
    parser.add_argument("--candidate", default=str(DEFAULT))
    parser.add_argument("--jobs", type=int, default=6)
    parser.add_argument("--setups", type=int, default=10)
    parser.add_argument("--M", type=int, default=512)
    parser.add_argument("--N", type=int, default=512)
    parser.add_argument("--budget-ms", type=int, default=1000)
    parser.add_argument("--json", help="write every measurement here")
    args = parser.parse_args()
    modes = ("box", "signals")
    setups = {m: [] for m in modes}
    jobs = {m: [] for m in modes}
    for _ in range(args.setups):
        for m in modes:
            with _mode(m):
                setups[m].append(_setup_s(args.world_size))
    for _ in range(args.jobs):
        for m in modes:
            with _mode(m):
                jobs[m].append(_job(args))
    med = statistics.median
    print(
        f"W={args.world_size} {args.device}, problem {args.problem}, {args.jobs} jobs and {args.setups} set-ups a "
        "mode, interleaved"
    )
    print(
        f"{'mode':<8} {'set-up ms':>9} {'job wall s':>10} {'pause ms (median/max)':>22} "
        f"{'ref ms':>8} {'cand ms':>8} {'A/A speedup':>11} verdicts"
    )
    for m in modes:
        rows = jobs[m]
        pause_med = med([r["pauses"].get("median_ms", float("nan")) for r in rows])
        pause_max = max(r["pauses"].get("max_ms", float("nan")) for r in rows)
        ref = [r["reference_ms"] for r in rows if r["reference_ms"]]
        cand = [r["candidate_ms"] for r in rows if r["candidate_ms"]]
        speed = [r["speedup"] for r in rows if r["speedup"]]
        verdicts = ",".join(sorted({r["verdict"] for r in rows}))
        print(
            f"{m:<8} {med(setups[m]) * 1e3:>9.1f} {med([r['wall_s'] for r in rows]):>10.2f} "
            f"{pause_med:>10.3f} / {pause_max:<9.3f} {med(ref) if ref else float('nan'):>8.4f} "
            f"{med(cand) if cand else float('nan'):>8.4f} {med(speed) if speed else float('nan'):>11.3f} {verdicts}"
        )
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"setups_s": setups, "jobs": jobs}, indent=1))


if __name__ == "__main__":
    main()
