"""Judge benchmarks (issues 2 and 8): overhead vs relaunch-per-trial, A/A precision, sensitivity, GPU backends.

    python3 benchmarks/judge_gpu.py overhead  --device cuda -W 1 [--problems 1-87] [--baseline-problems 1,13] [--warm 3]
    python3 benchmarks/judge_gpu.py aa        --device cuda -W 1 [--problems ...] [--repeats 3] [--warm 3] [--pairs 6]
                                              [--replace-memory]
    python3 benchmarks/judge_gpu.py selfcheck-aa --device cuda -W 1 [--problems 1-87] [--repeats 2]
    python3 benchmarks/judge_gpu.py sensitivity --device cuda -W 1 [--problem 13] [--repeats 20] [--warm 3] [--pairs 6]
    python3 benchmarks/judge_gpu.py backends  --device cuda -W 1

Every number is measured in the same run that prints it. ``--out DIR`` writes the raw JSON as well. ``--warm D`` judges
with a pool of D warm spares (evaluator/process/warm.py: groups started before their job; every job still in fresh
processes); without it every job starts cold.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import problems
from evaluator import judge
from evaluator.cli import _parse_ids
from evaluator.contract import schema
from evaluator.judge import evaluation, selfcheck
from evaluator.process import warm
from evaluator.process.group import RankGroup

HERE = pathlib.Path(__file__).resolve().parent


def relaunch_per_trial(pid: int, W: int, device: str, trials: int, M: int, N: int) -> float:
    """The naive protocol: a fresh launch of the reference, then of the candidate, for every trial (each launch runs
    one trial and one timing block), as harnesses that start torchrun per trial do. Returns wall seconds."""
    cfg = judge.Config(world_size=W, device=device, M=M, N=N)
    seeds = evaluation._seeds(cfg)
    began = time.monotonic()
    for t in range(trials):
        for role in ("ref", "cand"):
            with tempfile.TemporaryDirectory() as work:
                group = RankGroup(role, W, device, str(pid), "reference", work, M, N, "bfloat16", False, True)
                try:
                    group.collect(600)
                    group.command({"cmd": "trial", "trial": t, "seed": seeds[t], "tag": "x"}, 600)
                    group.command({"cmd": "time", "trial": t, "seed": seeds[t], "iters": 20, "warmup": 5}, 600)
                finally:
                    group.close()
    return time.monotonic() - began


def _checks(row: dict) -> str:
    """The cross-checks' numbers on a printed line: flags, the probe excess against its allowance (one pair's, or
    the pooled one of K pairs), how many pairs were set aside, and the largest share of short spins."""
    probe = (row.get("crosscheck") or {}).get("probe") or {}
    pooled = row.get("probe_pooled") or {}
    text = f" flags {row['flags']}" if row.get("flags") else ""
    if pooled:
        text += f" probe mean {pooled['mean_excess_ms']}/{pooled['allowance_ms']} ms"
    elif probe:
        text += f" probe {probe.get('excess_ms')}/{probe.get('allowance_ms')} ms"
    if row.get("set_aside"):
        text += f" set aside {len(row['set_aside'])}"
    short = row.get("spin_short_per_block") or {}
    most = max((x for side in short.values() for x in side), default=0.0)
    if most:  # calls whose spin ran out before the host had queued them (evaluator/rank/timed.py)
        text += f" spin short up to {most:.0%} of a block's calls"
    if row.get("faster_withheld"):  # ... in a reference block, for half its calls or more (rules._timing_document)
        text += " FASTER WITHHELD (reference blocks timed its host)"
    return text


def _progress(args, what: str, doc: dict) -> None:
    """Write the JSON so far after every row: a run cut short by the device's time limit keeps what it measured."""
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, f"{what}.json"), "w") as f:
            json.dump(doc, f, indent=1)


def _pool(args):
    """A warm pool closed when the command ends, however it ends (or no pool: every job starts cold)."""
    if not args.warm:
        return contextlib.nullcontext()
    return warm.WarmPool(args.world_size, args.device, depth=args.warm)


def cmd_overhead(args) -> dict:
    with _pool(args) as pool:
        return _overhead(args, pool)


def _overhead(args, pool) -> dict:
    rows = []
    began = time.monotonic()
    baseline = set(_parse_ids(args.baseline_problems))
    for pid in _parse_ids(args.problems):
        prob = problems.get(pid)
        if not prob.allows_world_size(args.world_size):
            continue
        # Untrusted: as a real candidate is judged (sandbox, kept outputs checked, probe blocks where the candidate
        # could be faster), so the throughput is the one submissions get.
        candidate = _public_reference_file(pid) if args.untrusted else "reference"
        result = judge.evaluate(pid, candidate, args.world_size, args.device, M=args.M, N=args.N, pool=pool)
        row = {
            "id": pid,
            "stem": prob.stem,
            "untrusted": args.untrusted,
            "verdict": result["verdict"],
            "wall_s": result["wall_s"],
            "warm_start": (result.get("environment") or {}).get("warm_start"),
            "overhead_s": result["judge_overhead_s"],
            "phases_s": result.get("phases_s"),
            **selfcheck.aa_summary(result),
        }
        if result["verdict"] != schema.CORRECT:
            row["message"] = result["message"][:1500]
            print(f"{pid:>3} {result['verdict']}: {row['message']}", flush=True)
        if pid in baseline:
            row["relaunch_wall_s"] = round(relaunch_per_trial(pid, args.world_size, args.device, 5, args.M, args.N), 2)
            row["ratio"] = round(row["relaunch_wall_s"] / result["wall_s"], 2)
        rows.append(row)
        print(
            f"{pid:>3} {prob.stem:<46} {result['verdict']:<14} wall {result['wall_s']:7.2f} s  overhead "
            f"{result['judge_overhead_s']:6.2f} s {row['phases_s']} ref {row['reference_ms']} ms A/A {row['speedup']} "
            f"{row['ci']}{'' if row['contains_1'] else ' MISSES 1.0'}{' FASTER' if row['faster'] else ''}"
            f"{' host-bound ' + str(row['host_bound_share']) if row['host_bound'] else ''}{_checks(row)}"
            + (f"  relaunch-per-trial {row['relaunch_wall_s']:7.2f} s ({row['ratio']:.1f}x)" if "ratio" in row else ""),
            flush=True,
        )
        _progress(args, "overhead", {"rows": rows, "partial": True})
    walls = [r["wall_s"] for r in rows]
    over = [r["overhead_s"] for r in rows]
    ratios = [r["ratio"] for r in rows if "ratio" in r]
    relaunch = [r["relaunch_wall_s"] for r in rows if "relaunch_wall_s" in r]
    elapsed = time.monotonic() - began
    # Wall to judge the set, baselines left out, per problem: what a queue of jobs sees (a warm pool's first job waits
    # for its start-up; the later ones find spares ready).
    per_problem = (elapsed - sum(relaunch)) / max(1, len(rows))
    summary = {
        "problems": len(rows),
        "untrusted": args.untrusted,
        "warm_depth": args.warm,
        "total_wall_s": round(sum(walls), 1),
        "elapsed_s": round(elapsed, 1),
        "median_wall_s": statistics.median(walls),
        "judging_elapsed_per_problem_s": round(per_problem, 2),
        "relaunch_over_judging_per_problem": round(statistics.median(relaunch) / max(1e-9, per_problem), 2)
        if relaunch
        else None,
        "median_overhead_s": statistics.median(over),
        "max_overhead_s": max(over),
        "relaunch_ratio_median": statistics.median(ratios) if ratios else None,
        "not_correct": [r["id"] for r in rows if r["verdict"] != schema.CORRECT],
        "aa_false_faster": sum(r["faster"] for r in rows),
        "aa_faster_withheld": [r["id"] for r in rows if r.get("faster_withheld")],
        "flagged": [r["id"] for r in rows if r.get("flags")],
        "probed": [r["id"] for r in rows if (r.get("crosscheck") or {}).get("probe")],
        "aa_intervals_missing_1": [r["id"] for r in rows if r["verdict"] == schema.CORRECT and not r["contains_1"]],
    }
    print("SUMMARY", json.dumps(summary))
    return {"rows": rows, "summary": summary}


def cmd_aa(args) -> dict:
    with _pool(args) as pool:
        return _aa(args, pool)


def _aa(args, pool) -> dict:
    rows, false_faster, misses = [], 0, 0
    began = time.monotonic()
    for rep in range(args.repeats):  # passes over all problems, so one problem's repeats are minutes apart
        for pid in _parse_ids(args.problems):
            prob = problems.get(pid)
            if not prob.allows_world_size(args.world_size):
                continue
            candidate = _public_reference_file(pid) if args.untrusted else "reference"
            result = judge.evaluate(
                pid,
                candidate,
                args.world_size,
                args.device,
                M=args.M,
                N=args.N,
                pool=pool,
                pairs=args.pairs,
                replace_memory=args.replace_memory,
                probe_always=True,
            )  # the probe check's honest noise, in every pair
            row = {
                "id": pid,
                "repeat": rep,
                "replace_memory": args.replace_memory,
                "untrusted": args.untrusted,
                "wall_s": result["wall_s"],
                **selfcheck.aa_summary(result),
            }
            false_faster += row["faster"]
            misses += not row["contains_1"]
            rows.append(row)
            print(
                f"{pid:>3} rep {rep} {row['verdict']:<10} speedup {row['speedup']} ci {row['ci']} "
                f"raw {row['bootstrap_ci']} {'' if row['contains_1'] else 'MISSES 1.0'}"
                f"{' FASTER' if row['faster'] else ''} host-bound {row['host_bound']} "
                f"{row['host_bound_share']}{_checks(row)} ({row['wall_s']} s)",
                flush=True,
            )
            _progress(args, "aa", {"rows": rows, "partial": True})
    speedups = [r["speedup"] for r in rows if r["speedup"]]
    summary = {
        "runs": len(rows),
        "warm_depth": args.warm,
        "elapsed_s": round(time.monotonic() - began, 1),
        "false_faster": false_faster,
        "intervals_missing_1": misses,
        "faster_withheld": sum(bool(r.get("faster_withheld")) for r in rows),
        "not_correct": sorted({r["id"] for r in rows if r["verdict"] != schema.CORRECT}),
        "speedup_min": min(speedups),
        "speedup_max": max(speedups),
        "speedup_p05": sorted(speedups)[int(0.05 * (len(speedups) - 1))],
        "speedup_p95": sorted(speedups)[int(0.95 * (len(speedups) - 1))],
    }
    print("SUMMARY", json.dumps(summary))
    return {"rows": rows, "summary": summary}


PUBLIC_REFERENCE = '''"""A/A as a stranger: problem {pid}'s public reference, judged as an untrusted candidate file (its
own sandbox, kept timed outputs checked, the cross-check on the harness costs every real candidate has)."""
import problems

solution = problems.get({pid}).solution
'''


def _public_reference_file(pid: int) -> str:
    path = pathlib.Path(tempfile.mkdtemp()) / f"public_reference_{pid}.py"
    path.write_text(PUBLIC_REFERENCE.format(pid=pid))
    return str(path)


SLOW = '''"""Sensitivity probe: the reference plus a documented delay of {delay_us:.2f} us per call (5% of the
reference): a GPU spin of {spin_us:.2f} us and that spin kernel's own launch, {launch_us:.2f} us."""
import torch
import problems

_ref = problems.get({pid}).solution


def solution(*inputs):
    out = _ref(*inputs)
    torch.cuda._sleep({cycles})
    return out
'''

FAST = '''"""Sensitivity probe: a cheaper but correct implementation of problem {pid} at W=1 (no fp32 round trip, no
collective) plus a documented GPU spin of {delay_us:.2f} us so that it lands near {target:.0%} of the reference."""
import torch


def solution(A_local, B_local):
    out = A_local @ B_local
    torch.cuda._sleep({cycles})
    return out
'''


def _cycles_per_us() -> float:
    import torch

    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(20_000_000)
    end.record()
    torch.cuda.synchronize()
    return 20_000_000 / (start.elapsed_time(end) * 1e3)


def _spin_launch_us(rate: float) -> float:
    """What one more (empty) spin kernel adds to a stream besides its cycles: 200 of them queued behind a long spin,
    timed by events. The "5% slower" probe's spin is shortened by this, so the probe is 5% slower and not 5% plus a
    launch (at problem 13's 16 us reference in run 5 the probe read 0.87x, not 0.95x)."""
    import torch

    torch.cuda.synchronize()
    torch.cuda._sleep(int(5000 * rate))  # holds the GPU while the host queues the burst below
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(200):
        torch.cuda._sleep(0)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / 200


def cmd_sensitivity(args) -> dict:
    with _pool(args) as pool:
        return _sensitivity(args, pool)


def _sensitivity(args, pool) -> dict:
    pid, W = args.problem, args.world_size
    base = judge.evaluate(pid, "reference", W, args.device, M=args.M, N=args.N, pool=pool)
    ref_ms = base["timing"]["reference_ms"]
    rate = _cycles_per_us()
    launch_us = _spin_launch_us(rate)
    delay_us = 0.05 * ref_ms * 1e3
    if delay_us < 2 * launch_us:
        print(
            f"WARNING: 5% of the reference ({delay_us:.2f} us) is under twice a spin kernel's launch "
            f"({launch_us:.2f} us): the slower probe cannot be exactly 5% at this size; use a larger --M/--N",
            flush=True,
        )
    work = pathlib.Path(tempfile.mkdtemp())
    slow = work / "slow5.py"
    spin_us = max(0.0, delay_us - launch_us)
    slow.write_text(
        SLOW.format(pid=pid, cycles=int(spin_us * rate), delay_us=delay_us, spin_us=spin_us, launch_us=launch_us)
    )
    # The cheaper variant's own time, then a spin that brings it to 90% of the reference.
    probe = work / "fast_probe.py"
    probe.write_text(FAST.format(pid=pid, cycles=0, delay_us=0.0, target=0.0))
    fast_ms = judge.evaluate(pid, str(probe), W, args.device, M=args.M, N=args.N)["timing"]["candidate_ms"]
    spin_us = max(0.0, 0.9 * ref_ms * 1e3 - fast_ms * 1e3)
    fast = work / "fast10.py"
    fast.write_text(FAST.format(pid=pid, cycles=int(spin_us * rate), delay_us=spin_us, target=0.9))
    out = {
        "reference_ms": ref_ms,
        "cheap_variant_ms": fast_ms,
        "cycles_per_us": rate,
        "spin_launch_us": launch_us,
        "slow_probe_faithful": delay_us >= 2 * launch_us,
        "runs": [],
    }
    cases = (("5% slower", slow, "slower"), ("10% faster", fast, "faster"))
    hits = {label: 0 for label, _, _ in cases}
    # The cases alternate, so a run cut by the device's time limit leaves as many repeats of one as of the other.
    for rep in range(args.repeats):
        for label, path, want in cases:
            began = time.monotonic()
            result = judge.evaluate(
                pid, str(path), W, args.device, M=args.M, N=args.N, pool=pool, pairs=args.pairs, probe_always=True
            )  # the slower probe too: its pairs calibrate the probe check
            t = result["timing"] or {}
            ci = t.get("speedup_ci", [1, 1])
            hit = (ci[1] < 1.0) if want == "slower" else bool(t.get("faster"))
            hits[label] += hit
            # The A/A rows' fields (what benchmarks/aa_rules.py re-judges), and what this probe adds.
            out["runs"].append(
                {
                    "case": label,
                    **selfcheck.aa_summary(result),
                    "ci": ci,
                    "detected": hit,
                    "wall_s": round(time.monotonic() - began, 1),
                }
            )
            out[label] = f"{hits[label]}/{rep + 1}"
            print(
                f"{label:<11} rep {rep:>2} speedup {t.get('speedup')} ci {ci} {'detected' if hit else 'MISSED'}"
                f"{_checks(out['runs'][-1])}",
                flush=True,
            )
            _progress(args, "sensitivity", dict(out, partial=True))
    print("SUMMARY", json.dumps({k: v for k, v in out.items() if k != "runs"}))
    return out


def cmd_selfcheck_aa(args) -> dict:
    """A/A repeats for every problem in one pair of process groups (the self-check's mode: trusted references switch
    problem with ``load``), so many repeats fit in little device time. Fresh processes per run are
    ``aa``/``overhead``."""
    rows = []

    def on_row(row):
        rows.append(row)
        for rep, aa in enumerate(row.get("aa", [])):
            print(
                f"{row['id']:>3} rep {rep} {aa['verdict']:<10} ref {aa['reference_ms']} ms A/A {aa['speedup']} "
                f"{aa['ci']} raw {aa['bootstrap_ci']}{'' if aa['contains_1'] else ' MISSES 1.0'}"
                f"{' FASTER' if aa['faster'] else ''}{' host-bound' if aa['host_bound'] else ''}",
                flush=True,
            )
        if row["verdict"] != schema.CORRECT:
            print(f"{row['id']:>3} {row['verdict']}: {row.get('message', '')[:300]}", flush=True)
        _progress(args, "selfcheck-aa", {"rows": rows, "partial": True})

    report = selfcheck.run(
        _parse_ids(args.problems),
        args.world_size,
        args.device,
        M=args.M,
        N=args.N,
        nulls=False,
        on_row=on_row,
        aa_repeats=args.repeats,
    )
    runs = [aa for row in report["rows"] for aa in row.get("aa", [])]
    speedups = sorted(a["speedup"] for a in runs if a["speedup"])
    summary = {
        "problems": len(report["rows"]),
        "runs": len(runs),
        "false_faster": sum(a["faster"] for a in runs),
        "intervals_missing_1": sum(not a["contains_1"] for a in runs if a["verdict"] == schema.CORRECT),
        "not_correct": [r["id"] for r in report["rows"] if r["verdict"] != schema.CORRECT],
        "speedup_min": speedups[0] if speedups else None,
        "speedup_max": speedups[-1] if speedups else None,
    }
    print("SUMMARY", json.dumps(summary))
    return {"rows": report["rows"], "summary": summary}


def cmd_backends(args) -> dict:
    rows = []
    for name in sorted(p.stem for p in (HERE / "candidates").glob("p*.py")):
        if args.only and not any(name.startswith(prefix) for prefix in args.only.split(",")):
            continue
        pid = int(name[1:3])
        began = time.monotonic()
        result = judge.evaluate(
            pid, str(HERE / "candidates" / f"{name}.py"), args.world_size, args.device, M=args.M, N=args.N
        )
        t = result.get("timing") or {}
        rows.append(
            {
                "candidate": name,
                "verdict": result["verdict"],
                "speedup": t.get("speedup"),
                "ci": t.get("speedup_ci"),
                "faster": t.get("faster"),
                "ref_ms": t.get("reference_ms"),
                "cand_ms": t.get("candidate_ms"),
                "wall_s": round(time.monotonic() - began, 1),
                "message": result["message"][:300],
            }
        )
        print(
            f"{name:<28} {result['verdict']:<14} ref {t.get('reference_ms')} ms cand {t.get('candidate_ms')} ms "
            f"speedup {t.get('speedup')} ci {t.get('speedup_ci')} faster={t.get('faster')} "
            f"({rows[-1]['wall_s']} s) {'' if result['verdict'] == 'correct' else result['message'][:300]}",
            flush=True,
        )
    return {"rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["overhead", "aa", "selfcheck-aa", "sensitivity", "backends"])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("-W", "--world-size", type=int, default=1)
    parser.add_argument("--problems", default=None)
    parser.add_argument("--baseline-problems", default="1,13")
    parser.add_argument("--problem", type=int, default=13)
    parser.add_argument("--only", default="", help="backends: candidate name prefixes, e.g. p08,p13")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--warm", type=int, default=0, help="overhead, aa, sensitivity: depth of the warm-spare pool (0: cold)"
    )
    parser.add_argument(
        "--pairs",
        type=int,
        default=1,
        help="aa, sensitivity: time each judged run in K fresh process pairs (evaluator/timing/pairs.py)",
    )
    parser.add_argument(
        "--replace-memory",
        action="store_true",
        help="aa: place each timing block's data anew in device memory (Config.replace_memory)",
    )
    parser.add_argument(
        "--untrusted",
        action="store_true",
        help="overhead, aa: judge each public reference as an untrusted candidate file, not the "
        "trusted 'reference' (which skips the sandbox and the kept-output checks)",
    )
    parser.add_argument("--M", type=int, default=1024)
    parser.add_argument("--N", type=int, default=1024)
    parser.add_argument("--out", default=os.environ.get("OUT"))
    args = parser.parse_args()
    result = {
        "overhead": cmd_overhead,
        "aa": cmd_aa,
        "selfcheck-aa": cmd_selfcheck_aa,
        "sensitivity": cmd_sensitivity,
        "backends": cmd_backends,
    }[args.what](args)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, f"{args.what}.json"), "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
