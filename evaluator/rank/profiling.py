"""Profile mode (``pkb eval ... --profile DIR``): a torch profiler trace per rank for a few iterations, the ranks'
traces merged into one Chrome trace, and a per-kernel summary (time in communication vs compute, and their overlap).

Rank side (``rank_profile``, the rank worker's ``profile`` command): build the inputs of one seed, call the solution
``warmup`` times, then record ``iters`` calls under ``torch.profiler`` (CPU activity, plus CUDA on GPUs), each call
after a barrier, inside a ``pkb_iter_<i>`` range that ends after the device is synchronised; export a Chrome trace.

Judge side (``record``): profile the reference ranks, then the candidate ranks (the candidate is paused while the
reference runs, as in the timed loop), merge the traces (one process row per rank: ``candidate rank r`` and
``reference rank r``; all ranks of one job run on one host, so their timestamps share a clock) and summarise.

The merge, the summary (what each row and total means) and its text: evaluator/rank/trace_summary.py. The candidate's
trace is written by the candidate's own process: it is a diagnostic for its author, never evidence for a verdict or a
ranking.
"""

from __future__ import annotations

import json
import os
import stat

from evaluator.rank.trace_summary import ITER_PREFIX, merge, render, summarize

ITERS = 5
WARMUP = 2
MAX_TRACE_BYTES = 64 * 2**20  # per rank; a larger trace is left out of the merge (and said so)


# --- rank side -----------------------------------------------------------------------------------------------------


def rank_profile(worker, cmd: dict, barrier, synchronize) -> None:
    """The ``profile`` command inside one rank (``worker`` is evaluator.rank.worker.Worker)."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    iters, warmup = int(cmd.get("iters", ITERS)), int(cmd.get("warmup", WARMUP))
    inputs = worker.problem.make_inputs(worker.context(cmd["seed"], cmd.get("trial", 0)))
    for _ in range(warmup):
        worker.solution(*inputs)
    synchronize(worker.device_kind)
    activities = [ProfilerActivity.CPU]
    if worker.device_kind == "cuda" and torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as prof:
        for i in range(iters):
            barrier()
            synchronize(worker.device_kind)
            with record_function(f"{ITER_PREFIX}{i}"):
                worker.solution(*inputs)
                synchronize(worker.device_kind)
    path = os.path.join(worker.args.out, f"{cmd['tag']}_r{worker.rank}.json")
    prof.export_chrome_trace(path)
    worker.reply(ok=True, seq=cmd["seq"], path=path, iters=iters)


# --- judge side ----------------------------------------------------------------------------------------------------


def record(pair, seed: int, directory: str, iters: int = ITERS, warmup: int = WARMUP) -> dict:
    """Profile both groups of a judge ``Pair`` and write DIR/trace.json, DIR/summary.json and DIR/summary.txt.

    Returns what the result document keeps under ``profile`` (paths, the summary, or an ``error``); a failure here
    never changes the verdict.
    """
    os.makedirs(directory, exist_ok=True)
    cmd: dict = {"cmd": "profile", "trial": 0, "seed": seed, "iters": iters, "warmup": warmup, "tag": "profile"}
    timeout = pair.timeout * 2 + 60
    traces: dict[str, list] = {}
    notes: list[str] = []
    try:
        pair._ref_command(cmd, timeout)
        traces["reference"] = [
            _read_trace(pair.ref.out_dir, cmd["tag"], r, notes, untrusted=False) for r in range(pair.cfg.world_size)
        ]
        pair._cand_command(cmd, timeout)
        traces["candidate"] = [
            _read_trace(pair.cand.out_dir, cmd["tag"], r, notes, untrusted=True) for r in range(pair.cfg.world_size)
        ]
    except Exception as exc:  # noqa: BLE001 - a failed profile is reported, never a verdict
        message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        return {"error": f"profiling failed: {message}", "directory": os.path.abspath(directory)}
    merged = merge(traces)
    summary = summarize(traces, iters)
    summary["notes"] = notes
    trace_path = os.path.join(directory, "trace.json")
    with open(trace_path, "w") as f:
        json.dump(merged, f)
    with open(os.path.join(directory, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.join(directory, "summary.txt"), "w") as f:
        f.write(render(summary) + "\n")
    return {"directory": os.path.abspath(directory), "trace": os.path.abspath(trace_path), "summary": summary}


def _read_trace(out_dir: str, tag: str, rank: int, notes: list, untrusted: bool) -> dict | None:
    """One rank's Chrome trace, or None (noted). The candidate owns its out/: no links, plain files, bounded size."""
    path = os.path.join(out_dir, f"{tag}_r{rank}.json")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        notes.append(f"rank {rank}: no trace ({exc.strerror})")
        return None
    unclosed: int | None = fd  # until the file object below owns it
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            notes.append(f"rank {rank}: trace is not a plain file")
            return None
        if info.st_size > MAX_TRACE_BYTES:
            notes.append(f"rank {rank}: trace of {info.st_size} bytes is over {MAX_TRACE_BYTES}; left out")
            return None
        with os.fdopen(fd, "rb") as f:
            unclosed = None
            data = json.loads(f.read())
        if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
            raise ValueError("no traceEvents list")
        return data
    except (ValueError, RecursionError) as exc:  # a trace nested past the parser's depth is unreadable too
        notes.append(f"rank {rank}: unreadable trace ({exc})" if untrusted else f"rank {rank}: bad trace ({exc})")
        return None
    finally:
        if unclosed is not None:
            os.close(unclosed)
        try:
            os.unlink(path)
        except OSError:
            pass
