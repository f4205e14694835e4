"""The ranks' Chrome traces of profile mode (evaluator/rank/profiling.py) merged into one trace, summarised, and the
summary as text. Standard library only: the judge reads the traces, no rank does.

Summary, per role and rank, over the ``pkb_iter`` windows only (the harness's barriers are outside them):
- On GPUs, the rows are device activity (kernels, memcpy, memset); on CPU (gloo), the CPU operators with their self
  time (duration minus their children's), since CPU operators nest.
- A row is *communication* when its name is a collective or point-to-point operation (NCCL or gloo kernels and ops,
  c10d collectives, NVSHMEM/symmetric-memory puts and gets), *memory* for copies and sets on GPUs, else *compute*.
- ``overlap_ms``: time during which a communication interval and a compute interval run at once on the same rank
  (communication events of any depth against compute leaves / kernels); ``exposed_comm_ms`` is communication time
  with no compute beside it.
All times are per iteration (mean over the recorded iterations).
"""

from __future__ import annotations

import re

TOP_ROWS = 40
ITER_PREFIX = "pkb_iter_"  # the range around each recorded call (rank_profile): the windows summarised
ROLE_PID_BASE = {"candidate": 0, "reference": 1000}

COMM_PATTERN = re.compile(
    r"nccl|gloo|c10d::|record_param_comms|all_?reduce|all_?gather|reduce_?scatter|broadcast|all_?to_?all|"
    r"alltoall|\bsend\b|\brecv\b|isend|irecv|sendrecv|barrier|symm_?mem|nvshmem|multimem|one_?shot_all|p2p",
    re.IGNORECASE,
)
DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def _events(trace: dict | None) -> list[dict]:
    if not trace:
        return []
    return [e for e in trace["traceEvents"] if isinstance(e, dict)]


def merge(traces: dict[str, list]) -> dict:
    """One Chrome trace: one process row per (role, rank), its threads and GPU streams as that row's threads."""
    out: list[dict] = []
    starts = [
        float(e["ts"])
        for role in traces.values()
        for t in role
        for e in _events(t)
        if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float)) and not isinstance(e.get("pid"), str)
    ]
    t0 = min(starts) if starts else 0.0
    for role, ranks in traces.items():
        for rank, trace in enumerate(ranks):
            pid = ROLE_PID_BASE.get(role, 2000) + rank
            out.append(
                {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": f"{role} rank {rank}"}}
            )
            out.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
            tids: dict = {}
            names: dict = {}
            for e in _events(trace):
                if e.get("ph") == "M" and e.get("name") == "thread_name":
                    names[(e.get("pid"), e.get("tid"))] = (e.get("args") or {}).get("name")
            for e in _events(trace):
                ph = e.get("ph")
                if ph == "M" or not isinstance(e.get("ts"), (int, float)):
                    continue
                if isinstance(e.get("pid"), str):  # the profiler's own spans ("Spans", "Traces")
                    continue
                key = (e.get("pid"), e.get("tid"))
                if key not in tids:
                    tids[key] = len(tids) + 1
                    label = names.get(key) or (
                        f"stream {key[1]}" if e.get("cat") in DEVICE_CATEGORIES else f"thread {key[1]}"
                    )
                    out.append(
                        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tids[key], "args": {"name": str(label)}}
                    )
                event = dict(e, pid=pid, tid=tids[key], ts=round(float(e["ts"]) - t0, 3))
                if "id" in event and isinstance(event["id"], int):  # flow ids must not collide across ranks
                    event["id"] = pid * 10**12 + event["id"]
                out.append(event)
    return {
        "traceEvents": out,
        "displayTimeUnit": "ms",
        "otherData": {"pkb": "merged by evaluator.rank.profiling; times in microseconds from the first event"},
    }


def category(event: dict) -> str:
    name = str(event.get("name", ""))
    if COMM_PATTERN.search(name):
        return "communication"
    if event.get("cat") in ("gpu_memcpy", "gpu_memset"):
        return "memory"
    return "compute"


def _windows(events: list[dict]) -> list[tuple[float, float]]:
    spans = [
        (float(e["ts"]), float(e["ts"]) + float(e.get("dur") or 0))
        for e in events
        if e.get("ph") == "X" and str(e.get("name", "")).startswith(ITER_PREFIX)
    ]
    return sorted(spans)


def _inside(e: dict, windows: list[tuple[float, float]]) -> bool:
    start = float(e["ts"])
    return any(lo <= start < hi for lo, hi in windows)


def _self_times(ops: list[dict]) -> dict[int, float]:
    """Duration minus the duration of direct children, per event (by index), on each thread separately."""
    by_thread: dict = {}
    for i, e in enumerate(ops):
        by_thread.setdefault((e.get("pid"), e.get("tid")), []).append(i)
    own = {i: float(ops[i].get("dur") or 0) for i in range(len(ops))}
    for indices in by_thread.values():
        indices.sort(key=lambda i: (float(ops[i]["ts"]), -float(ops[i].get("dur") or 0)))
        stack: list[int] = []
        for i in indices:
            start = float(ops[i]["ts"])
            while stack and float(ops[stack[-1]]["ts"]) + float(ops[stack[-1]].get("dur") or 0) <= start:
                stack.pop()
            if stack:
                own[stack[-1]] -= float(ops[i].get("dur") or 0)
            stack.append(i)
    return {i: max(0.0, v) for i, v in own.items()}


def _leaves(ops: list[dict]) -> list[dict]:
    """Events that contain no other event on their thread."""
    out = []
    by_thread: dict = {}
    for e in ops:
        by_thread.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    for events in by_thread.values():
        events.sort(key=lambda e: (float(e["ts"]), -float(e.get("dur") or 0)))
        for k, e in enumerate(events):
            end = float(e["ts"]) + float(e.get("dur") or 0)
            nxt = events[k + 1] if k + 1 < len(events) else None
            if nxt is None or float(nxt["ts"]) >= end:
                out.append(e)
    return out


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[list[float]] = []
    for lo, hi in sorted(intervals):
        if hi <= lo:
            continue
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return [(a, b) for a, b in merged]


def _length(intervals: list[tuple[float, float]]) -> float:
    return sum(hi - lo for lo, hi in intervals)


def _intersection(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def summarize_rank(trace: dict | None, iters: int) -> dict | None:
    events = [e for e in _events(trace) if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float))]
    windows = _windows(events)
    if not windows:
        return None
    n = max(1, len(windows))
    device = [e for e in events if e.get("cat") in DEVICE_CATEGORIES and _inside(e, windows)]
    if device:
        rows_source = [(e, float(e.get("dur") or 0)) for e in device]
        leaves, level = device, "device"
    else:
        ops = [
            e
            for e in events
            if e.get("cat") in ("cpu_op", "user_annotation")
            and not str(e.get("name", "")).startswith(ITER_PREFIX)
            and _inside(e, windows)
        ]
        own = _self_times(ops)
        rows_source = [(e, own[i]) for i, e in enumerate(ops)]
        leaves, level = _leaves(ops), "cpu"
    rows: dict = {}
    for e, self_us in rows_source:
        name = str(e.get("name", "?"))
        row = rows.setdefault(name, {"name": name, "category": category(e), "calls": 0, "self_us": 0.0})
        row["calls"] += 1
        row["self_us"] += self_us
    comm = _union(
        [
            (float(e["ts"]), float(e["ts"]) + float(e.get("dur") or 0))
            for e, _ in rows_source
            if category(e) == "communication"
        ]
    )
    compute = _union(
        [(float(e["ts"]), float(e["ts"]) + float(e.get("dur") or 0)) for e in leaves if category(e) != "communication"]
    )
    totals = {
        c: sum(r["self_us"] for r in rows.values() if r["category"] == c)
        for c in ("communication", "compute", "memory")
    }
    overlap = _intersection(comm, compute)
    iteration_us = sum(hi - lo for lo, hi in windows) / n
    return {
        "level": level,
        "iterations": n,
        "iteration_ms": iteration_us / 1e3,
        "comm_ms": totals["communication"] / n / 1e3,
        "compute_ms": totals["compute"] / n / 1e3,
        "memory_ms": totals["memory"] / n / 1e3,
        "comm_span_ms": _length(comm) / n / 1e3,
        "compute_span_ms": _length(compute) / n / 1e3,
        "overlap_ms": overlap / n / 1e3,
        "exposed_comm_ms": (_length(comm) - overlap) / n / 1e3,
        "rows": {
            name: {"category": r["category"], "calls": r["calls"] / n, "self_ms": r["self_us"] / n / 1e3}
            for name, r in rows.items()
        },
    }


def summarize(traces: dict[str, list], iters: int) -> dict:
    """Per role: each rank's totals and a per-kernel table (mean over ranks per iteration, and the slowest rank)."""
    out: dict = {"iters": iters, "roles": {}}
    for role, ranks in traces.items():
        per_rank = [summarize_rank(t, iters) for t in ranks]
        present = [s for s in per_rank if s is not None]
        table: dict = {}
        for s in present:
            for name, row in s["rows"].items():
                entry = table.setdefault(
                    name, {"name": name, "category": row["category"], "calls": 0.0, "mean_ms": 0.0, "max_ms": 0.0}
                )
                entry["calls"] += row["calls"] / len(present)
                entry["mean_ms"] += row["self_ms"] / len(present)
                entry["max_ms"] = max(entry["max_ms"], row["self_ms"])
        iteration = max((s["iteration_ms"] for s in present), default=0.0)
        kernels = sorted(table.values(), key=lambda r: -r["mean_ms"])
        for row in kernels:
            row["share"] = row["mean_ms"] / iteration if iteration > 0 else None
            for key in ("calls", "mean_ms", "max_ms", "share"):
                if row[key] is not None:
                    row[key] = round(row[key], 6)
        ranks_out = []
        for r, one in enumerate(per_rank):
            if one is None:
                ranks_out.append({"rank": r, "missing": True})
                continue
            ranks_out.append(
                dict({k: (round(v, 6) if isinstance(v, float) else v) for k, v in one.items() if k != "rows"}, rank=r)
            )
        totals: dict[str, float | None] = {}
        for key in (
            "iteration_ms",
            "comm_ms",
            "compute_ms",
            "memory_ms",
            "comm_span_ms",
            "compute_span_ms",
            "overlap_ms",
            "exposed_comm_ms",
        ):
            values = [s[key] for s in present]
            totals[key] = round(sum(values) / len(values), 6) if values else None
        span = totals["comm_span_ms"] or 0.0
        overlap = totals["overlap_ms"] or 0.0  # a span > 0 has its overlap
        totals["overlap_fraction_of_comm"] = round(overlap / span, 4) if span > 0 else None
        out["roles"][role] = {
            "ranks": ranks_out,
            "mean": totals,
            "kernels": kernels[:TOP_ROWS],
            "kernels_total": len(kernels),
            "level": present[0]["level"] if present else None,
        }
    return out


def render(summary: dict, limit: int = 15) -> str:
    """A plain-text table for the terminal and summary.txt."""
    lines = []
    for role, data in summary.get("roles", {}).items():
        mean = data["mean"]
        if mean.get("iteration_ms") is None:
            lines.append(f"{role}: no trace")
            continue
        overlap = mean.get("overlap_fraction_of_comm")
        lines.append(
            f"{role} ({data['level']} level, per iteration, mean over ranks): iteration "
            f"{mean['iteration_ms']:.3f} ms, communication {mean['comm_ms']:.3f} ms, compute "
            f"{mean['compute_ms']:.3f} ms, overlap {mean['overlap_ms']:.3f} ms"
            + (f" ({overlap:.0%} of communication)" if overlap is not None else "")
            + f", exposed communication {mean['exposed_comm_ms']:.3f} ms"
        )
        lines.append(
            f"  {'kernel / operator':<60} {'kind':<13} {'calls':>6} {'mean ms':>10} {'max ms':>10} {'share':>6}"
        )
        for row in data["kernels"][:limit]:
            share = f"{row['share']:.0%}" if row.get("share") is not None else "-"
            lines.append(
                f"  {row['name'][:60]:<60} {row['category']:<13} {row['calls']:>6.1f} "
                f"{row['mean_ms']:>10.4f} {row['max_ms']:>10.4f} {share:>6}"
            )
        if data["kernels_total"] > limit:
            lines.append(f"  ... {data['kernels_total'] - limit} more in summary.json")
    for note in summary.get("notes") or []:
        lines.append(f"note: {note}")
    return "\n".join(lines)
