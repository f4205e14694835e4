"""The program one rank runs: ``python -m evaluator.rank_worker --role ref|cand ...``.

The judge starts W of these per role (reference ranks and candidate ranks are separate process groups, never the same
processes) and drives them with JSON commands on stdin; replies go back as JSON lines on the file descriptor given by
--reply-fd. Commands: ``trial`` (build inputs from a seed, run ``solution``; a candidate's ranks save their outputs as
tensor files in --out, a reference's ranks, asked to ``hold``, keep theirs on their device), ``check`` (reference
ranks only: compare the candidate's file for the held trial with the held output, see evaluator/outputs.py), ``time``
(one timing block), ``kept`` (write the output a timing block kept), ``load`` (switch problem: trusted references in
self-checks; or the job's problem and candidate, once, in a warm spare started with ``--problem -`` before the job was
known), ``exit``.

Everything here runs in an untrusted process when the role is ``cand``: nothing it reports is believed without a
check (its outputs are compared by the reference's ranks, its timings cross-checked against the judge's own clock).
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import statistics
import sys
import time
import traceback
from typing import Optional

import torch
import torch.distributed as dist

import problems
from evaluator import messages, nulls, outputs
from evaluator.warm import DEFERRED
from problems.base import InputContext, derive_seed

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def _shape_of(cmd: dict) -> dict:
    """The shape fields a ``load`` may carry, checked: they come from the judge, but nothing here trusts a type."""
    shape = {}
    for key in ("M", "N"):
        if key in cmd:
            shape[key] = int(cmd[key])
    if "dtype" in cmd:
        if cmd["dtype"] not in DTYPES:
            raise ValueError(f"unknown dtype {cmd['dtype']!r}")
        shape["dtype"] = cmd["dtype"]
    if "reduced" in cmd:
        shape["reduced"] = bool(cmd["reduced"])
    return shape

# The harness's clocks and synchronisation, bound before the candidate's module is imported, so that patching
# time.perf_counter, torch.cuda.Event, torch.cuda.synchronize or torch.distributed in the candidate's module does not
# change what the harness calls. (A candidate can still patch these names here: nothing in this process is trusted;
# the judge cross-checks every block against its own clock.)
_perf_counter = time.perf_counter
_CudaEvent = torch.cuda.Event
_elapsed_time = torch.cuda.Event.elapsed_time
_record = torch.cuda.Event.record
_cuda_synchronize = torch.cuda.synchronize
_barrier = dist.barrier
_all_reduce = dist.all_reduce
_urandom = os.urandom
_cuda_sleep = torch.cuda._sleep
_query = torch.cuda.Event.query
_empty_cache = torch.cuda.empty_cache
_memory_reserved = torch.cuda.memory_reserved

# Above this much cached device memory a rank hands its cache back after a command: the other role's ranks share the
# GPU and may need it (problem 68's table is 57 GB per input set at W = 1). The larger of a floor and a share of the
# device, so that a side never holds more than an eighth of it idle while the other runs, and a job of a few GB keeps
# its cache from block to block: handing back and re-allocating ~10 GB inside each timing block (problem 1 at
# 24576 x 32768) took milliseconds that varied from block to block, noise in the judge's wall clock in which the
# probe check cannot see work hidden beside the spin (docs/calibration.md, RELEASE_CACHE_BYTES).
RELEASE_CACHE_BYTES = 4 * 2**30
RELEASE_CACHE_SHARE = 8


def release_threshold(total_bytes: int) -> int:
    """The cached bytes above which a rank on a device of ``total_bytes`` hands its cache back (see above)."""
    return max(RELEASE_CACHE_BYTES, total_bytes // RELEASE_CACHE_SHARE)


# The spin ahead of each timed call lasts at least this many times the host's own time to enqueue one call (measured
# on the untimed warm-up calls), so that the host is done queueing before the GPU reaches the start event. The margin
# covers the tiniest calls, whose host time the factor alone under-covers (docs/calibration.md, SPIN_HOST_FACTOR).
SPIN_HOST_FACTOR = 3.0
SPIN_MARGIN_US = 100.0
SPIN_MAX_US = 5_000.0


def spin_wish_us(host_us: list[float]) -> float:
    """The spin a rank asks for ahead of each timed call: a margin over its host time to enqueue one call, the median
    of the warm-up calls measured (see time()), so that one slow call (allocator growth, a garbage collection) moves
    it little."""
    typical = statistics.median(host_us) if host_us else 0.0
    return min(SPIN_MAX_US, SPIN_HOST_FACTOR * typical + SPIN_MARGIN_US)


# ``replace_memory`` blocks (an experiment, off unless the judge asks): the cache is handed back and up to this many
# bytes, a random amount, are held before the block's inputs are built, so each block's data lands elsewhere in device
# memory. Run 5 found each process with a speed factor of its own (~2% SD, reference and candidate processes alike);
# if placement is the cause, blocks placed anew show it inside one pair, where the bootstrap can see it.
REPLACE_PAD_BYTES = 256 * 2**20
# Bytes of distinct input sets kept at once in one timing block (per rank); beyond that, sets are rebuilt after use.
POOL_BYTES = {"cuda": 8 * 2**30, "cpu": 256 * 2**20}


class Reply:
    def __init__(self, fd: int):
        self.stream = os.fdopen(fd, "w", buffering=1)

    def __call__(self, **fields) -> None:
        self.stream.write(json.dumps(fields) + "\n")
        self.stream.flush()


def _failure(exc: BaseException, candidate: Optional[str], role: str, loading: bool = False) -> dict:
    """The ``kind`` and ``error`` of a failure reply. A candidate's: the root cause in its author's terms
    (evaluator/messages.py), the full traceback going to this rank's stderr, the owner's log. A reference's is the
    platform's own failure: the traceback as it is."""
    traceback.print_exc(file=sys.stderr)
    sys.stderr.flush()
    if role != "cand":
        return {"kind": "compile_error" if loading else "runtime_error", "error": traceback.format_exc(limit=20)}
    path = candidate if candidate and os.path.isfile(candidate) else None
    return {"kind": messages.kind_of(exc, loading=loading), "error": messages.describe(exc, path)}


def load_candidate(path: str):
    spec = importlib.util.spec_from_file_location("candidate_solution", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["candidate_solution"] = module
    spec.loader.exec_module(module)
    fn = getattr(module, "solution", None)
    if not callable(fn):
        raise ImportError(f"{os.path.basename(path)} defines no callable solution(*inputs)")
    return fn


def resolve_solution(problem, candidate: str):
    if candidate == "reference":
        return problem.solution
    if candidate.startswith("null:"):
        return nulls.make(candidate[5:], problem)
    return load_candidate(candidate)


def synchronize(device: str) -> None:
    if device == "cuda":
        for index in range(torch.cuda.device_count()):
            _cuda_synchronize(index)


def timing_set_seed(block_seed: int, index: int) -> int:
    """The seed of the ``index``-th input set of a timing block: every call in a block gets its own inputs."""
    return derive_seed(block_seed, "timing-set", index) & ((1 << 62) - 1)


def _randbelow(n: int) -> int:
    """Uniform in [0, n) from the OS (not from torch or random, whose state the candidate could read or set)."""
    return int.from_bytes(_urandom(8), "little") % n


def _driver_version():
    """The kernel driver's version from /proc (instant), else nvidia-smi (a subprocess: ~0.5 s of a rank's start)."""
    try:
        with open("/proc/driver/nvidia/version") as f:
            words = f.readline().split()
        return next(w for w in words if w[0].isdigit() and w.count(".") >= 1)
    except Exception:  # noqa: BLE001 - not there in containers without /proc/driver: ask the tool
        pass
    try:
        import subprocess

        return subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20).stdout.split("\n")[0].strip() or None
    except Exception:  # noqa: BLE001 - informative only
        return None


def environment(backend: str) -> dict:
    import platform
    import socket

    env = {"host": socket.gethostname(), "python": platform.python_version(), "torch": torch.__version__,
           "backend": backend, "gpus": [], "driver": None, "cuda": torch.version.cuda, "nccl": None, "triton": None}
    if torch.cuda.is_available():
        env["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        try:
            env["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
        except Exception:  # noqa: BLE001 - informative only
            pass
        env["driver"] = _driver_version()
    try:
        # The installed version, without importing triton (an import costs a rank's start ~0.5 s for one string).
        from importlib import metadata

        env["triton"] = metadata.version("triton")
    except Exception:  # noqa: BLE001 - informative only
        pass
    return env


class Worker:
    def __init__(self, args):
        self.args = args
        self.rank = args.rank
        self.world_size = args.world_size
        self.device_kind = args.device
        self.reply = Reply(args.reply_fd)
        self.dtype = DTYPES[args.dtype]
        self.groups: dict = {}
        self.problem = None
        self.solution = None
        self.candidate = None  # the loaded candidate's path (or "reference", "null:..."), for failure messages
        self.host_us = []  # host times to enqueue one warm-up call of the loaded solution (see time())
        self._kept = None  # the output the last timing block kept, until the judge's ``kept`` command
        self._held = None  # (tag, output): a reference rank's output of the last ``hold`` trial, until ``check``
        self.release_bytes = RELEASE_CACHE_BYTES  # set from the device's size at start (CUDA)

    # --- set-up ----------------------------------------------------------------------------------------------------
    def start(self) -> bool:
        torch.set_num_threads(max(1, int(os.environ.get("PKB_THREADS_PER_RANK", "1"))))
        if hasattr(torch.serialization, "set_crc32_options"):
            # Output files need no checksum (whoever wrote one could have written any bytes): without it a 300 MB
            # output saves in ~0.29 s instead of ~0.38 s (this 2-core VM), and problem 77 saves twelve of them a job.
            torch.serialization.set_crc32_options(False)
        pin_to_cores(self.rank, self.world_size)
        backend = "nccl" if self.device_kind == "cuda" else "gloo"
        try:
            if self.device_kind == "cuda":
                local = self.rank % torch.cuda.device_count()
                torch.cuda.set_device(local)
                self.device = torch.device("cuda", local)
                total = torch.cuda.get_device_properties(self.device).total_memory  # before any candidate code
                self.release_bytes = release_threshold(total)
                dist.init_process_group(backend, rank=self.rank, world_size=self.world_size,
                                        timeout=datetime.timedelta(seconds=self.args.dist_timeout),
                                        device_id=self.device)
            else:
                self.device = torch.device("cpu")
                dist.init_process_group(backend, rank=self.rank, world_size=self.world_size,
                                        timeout=datetime.timedelta(seconds=self.args.dist_timeout))
                from evaluator import gloo_compat  # NCCL's collective forms that gloo lacks (the CPU profile)
                gloo_compat.install()
        except Exception as exc:  # noqa: BLE001 - the harness failed to start, not the candidate
            self.reply(ok=False, kind="infra_error", error=f"process group init failed: {exc}")
            return False
        self.env = environment(backend) if self.rank == 0 else None
        self.reply(ok=True, event="initialized")  # before any candidate code runs (see group.RankGroup._accept)
        if self.args.problem == DEFERRED:  # a warm spare (evaluator/warm.py): the job arrives with the first load
            self.reply(ok=True, event="ready", env=self.env)
            return True
        return self.load(self.args.problem, self.args.candidate, first=True)

    def load(self, problem_key, candidate: str, first: bool = False, shape: Optional[dict] = None) -> bool:
        """Switch to a problem and candidate; ``shape`` (M, N, dtype, reduced) is the job's, for a warm spare."""
        for key, value in (shape or {}).items():
            setattr(self.args, key, value)
        self.dtype = DTYPES[self.args.dtype]
        self.problem = problems.get(problem_key)
        self.host_us, self._kept, self._held = [], None, None
        try:
            self.solution = resolve_solution(self.problem, candidate)
        except BaseException as exc:  # noqa: BLE001 - reported as the candidate's failure
            self.reply(ok=False, **_failure(exc, candidate, self.args.role, loading=True))
            return False
        self.candidate = candidate
        self.reply(ok=True, event="ready", env=self.env if first else None)
        return True

    # --- commands ---------------------------------------------------------------------------------------------------
    def context(self, seed: int, trial: int, M: Optional[int] = None, N: Optional[int] = None) -> InputContext:
        return InputContext(rank=self.rank, world_size=self.world_size, M=M or self.args.M, N=N or self.args.N,
                            dtype=self.dtype, device=self.device, seed_base=seed, trial=trial,
                            problem_id=self.problem.id, reduced=self.args.reduced, groups=self.groups)

    def trial(self, cmd: dict) -> None:
        self._held = None  # an output held for a check that never came (the trial before failed): not kept twice
        self._release_cache(everything=True)  # untimed: each side starts its trial with the device to itself
        began = _perf_counter()
        inputs = self.problem.make_inputs(self.context(cmd["seed"], cmd["trial"], cmd.get("M"), cmd.get("N")))
        synchronize(self.device_kind)
        build_ms = (_perf_counter() - began) * 1e3
        _barrier()
        start = _perf_counter()
        output = self.solution(*inputs)
        synchronize(self.device_kind)
        elapsed_ms = (_perf_counter() - start) * 1e3
        del inputs
        if cmd.get("hold"):
            # A reference rank keeps its output where it is (one at a time) for the ``check`` that follows the
            # candidate's trial: it never becomes a file, and is compared on the device. Nothing else of it stays
            # on the device: the candidate's trial runs next and gets the whole device but that output, as it
            # would beside a reference run in turn in one process (problem 68 at W = 1: a 57 GB table each).
            self._held = (cmd["tag"], output)
            self._release_cache(everything=True)
            self.reply(ok=True, seq=cmd["seq"], ms=elapsed_ms, build_ms=build_ms, shapes=outputs.describe(output),
                       nbytes=outputs.nbytes(output))
            return
        path = os.path.join(self.args.out, f"{cmd['tag']}_r{self.rank}.pt")
        try:
            saved = outputs.portable(output)
        except TypeError as exc:
            self.reply(ok=False, kind="incorrect", error=str(exc), seq=cmd["seq"])
            return
        torch.save(saved, path)
        del output, saved
        self._release_cache()
        self.reply(ok=True, seq=cmd["seq"], ms=elapsed_ms, build_ms=build_ms, path=path)

    def check(self, cmd: dict) -> None:
        """Reference ranks: compare this rank's file of the candidate's (``dir``/``files[rank]``; none: nothing to
        check on this rank) with the output held from the trial ``tag``, then drop both."""
        held, self._held = self._held, None
        if held is None or held[0] != cmd["tag"]:
            raise RuntimeError(f"no held output for {cmd['tag']!r} (holding {held and held[0]!r})")
        name = cmd["files"][self.rank]
        entry = None
        if name is not None:  # the held output is complete: ``trial`` synchronized after the call
            entry = outputs.check_file(self.problem, held[1], os.path.join(cmd["dir"], os.path.basename(name)),
                                       self.rank, self.world_size)
        del held
        self._release_cache()
        self.reply(ok=True, seq=cmd["seq"], check=entry)

    def _release_cache(self, everything: bool = False) -> None:
        """Hand the allocator's cache back to the device: always with ``everything`` (untimed correctness trials, so
        the other group has the device), else only above an eighth of it (between timing blocks, where re-allocating
        would fall inside the judge's clock)."""
        if self.device_kind == "cuda" and (everything or _memory_reserved(self.device) > self.release_bytes):
            _empty_cache()

    def time(self, cmd: dict) -> None:
        """One timing block: ``warmup`` untimed calls then ``iters`` timed ones, each call on its own input set.

        Input sets are built from the block's seed (fresh per block, chosen by the judge), so no two calls in a job see
        the same inputs: a cache keyed by pointer, id or content never hits. As many sets as fit in POOL_BYTES are
        built up front; beyond that each set is rebuilt right after its use, for a call that comes later. On CUDA
        the L2 cache is flushed before each timed call. After each timed call, and only then, the worker decides
        (from the OS's randomness) whether to keep a copy of that output (reservoir sampling: one timed call per
        block, uniformly); the judge checks it against the reference on the same inputs.
        """
        seed, trial = cmd["seed"], cmd["trial"]
        warmup, iters = cmd["warmup"], cmd["iters"]
        calls = warmup + iters
        pad = self._new_placement() if cmd.get("replace_memory") else None  # noqa: F841 - held for the block
        build = lambda k: list(self.problem.make_inputs(self.context(timing_set_seed(seed, k), trial)))  # noqa: E731
        first = build(0)
        # One set alone when a set is huge (then each is rebuilt right after its call); two or more otherwise.
        slots = max(1, min(calls, POOL_BYTES[self.device_kind] // max(1, outputs.nbytes(first))))
        pool = [first] + [build(k) for k in range(1, min(slots, calls))]
        del first  # the pool holds it: with one slot it must go when its call is done
        flush = self._l2_flush_buffer()
        timer = _EventTimer() if self.device_kind == "cuda" else _WallTimer()
        keep = "tag" in cmd
        kept, kept_call = None, None
        samples = []
        host_paced = 0  # timed calls whose pace the host set (see below)
        spin_short = 0  # timed calls whose start event the GPU had passed before the host was done queueing the call
        spin_us, spin_cycles, wanted_us = 0.0, 0, 0.0
        for i in range(calls):
            inputs = pool[i % slots]
            if i < warmup:
                # The host time to enqueue a call, as a timed call meets it: with the device idle (without this sync
                # a warm-up call also waited for the launch queue to drain behind the block's input building) and
                # after a call of the block (the first call after building the block's inputs is slower: allocator,
                # caches). Blocks 1+ have one warm-up call, so only block 0's calls 1+ count and the wish is the same
                # from block 1 on. Counting each block's first call grew the spins from block to block while the
                # calls' medians stayed the same: judge time spent idle and room for work beside the spin
                # (docs/calibration.md, "The host time per call").
                synchronize(self.device_kind)
                began = _perf_counter()
                output = self.solution(*inputs)
                if i > 0:
                    self.host_us.append((_perf_counter() - began) * 1e6)
                if i == warmup - 1:
                    synchronize(self.device_kind)
                    if self.device_kind == "cuda":
                        wanted_us = spin_wish_us(self.host_us)
                        if cmd.get("spin_exact"):
                            # The judge sets one spin for both sides (from the ranks' ``spin_wanted_us``, see
                            # judge.Pair._time), so it cancels in the judge's cross-check of wall clocks; spins each
                            # process set for itself differed between the sides (docs/calibration.md, spin_exact).
                            spin_us = min(SPIN_MAX_US, float(cmd.get("spin_us", 0.0)))
                        else:
                            spin_us = max(cmd.get("spin_us", 0.0), wanted_us)
                        spin_cycles = int(spin_us * _cycles_per_us())
            else:
                if flush is not None:
                    flush.zero_()
                _barrier()
                synchronize(self.device_kind)
                if spin_cycles:
                    # A blocking kernel ahead of the start event (as NVBench does): while the GPU spins, the host
                    # queues the call, so the events time the device work rather than this process's launch latency,
                    # which differs between processes and would make identical code look faster or slower than itself.
                    _cuda_sleep(spin_cycles)
                timer.start()
                began = _perf_counter()
                output = self.solution(*inputs)
                timer.stop()
                if self.device_kind == "cuda":
                    # Host-paced: the GPU had already finished when the host returned (launches slower than the GPU
                    # runs them), or the host returned only after the spin was over (it waited on the GPU: a sync
                    # inside the call). Either way the events also measure this process's host speed.
                    waited_us = (_perf_counter() - began) * 1e6
                    if _query(timer.end) or (spin_us and waited_us > spin_us):
                        host_paced += 1
                    # A diagnostic, not a verdict: the spin ran out before the host had queued the whole call, so
                    # the GPU may have waited inside the window (a call with a long first kernel is still timed
                    # right). It tells a spin shorter in time than asked from slower GPU work, where tiny calls'
                    # block medians move with no host-paced call (docs/calibration.md, spin_short).
                    elif spin_us and _query(timer.begin):
                        spin_short += 1
                synchronize(self.device_kind)
                samples.append(timer.elapsed_ms())
                try:
                    outputs.check_plain(output)  # every timed output is of plain types; one is also kept
                    if keep and _randbelow(i - warmup + 1) == 0:
                        # Copied at once (a later call may reuse the buffer, a thread may finish it late), but on the
                        # device: a host copy here, of a size the dice decide, would vary this block's wall time.
                        kept, kept_call = outputs.snapshot(output), i
                        synchronize(self.device_kind)
                except TypeError as exc:
                    self.reply(ok=False, kind="incorrect", error=f"timed call {i}: {exc}", seq=cmd["seq"])
                    return
            del output
            inputs = None  # with one slot, the set just used must be gone before the next is built
            if i + slots < calls:  # rebuild this slot for a later call (outside any timed window)
                pool[i % slots] = None
                pool[i % slots] = build(i + slots)
        del pool
        # The cache is handed back (if large) by the ``kept`` command that follows every block, off the judge's clock.
        # The slowest rank defines the iteration: collectives finish together, compute may not.
        per_rank = torch.tensor(samples, dtype=torch.float64, device=self.device)
        _all_reduce(per_rank, op=dist.ReduceOp.MAX)
        extra = {}
        self._kept = kept  # written by the next command, ``kept``: outside the judge's clock around this block
        if keep:
            extra = {"kept_call": kept_call, "kept_seed": timing_set_seed(seed, kept_call)}
        # Every call had an input set of its own (``sets``); ``slots`` of them were alive at once.
        self.reply(ok=True, seq=cmd["seq"], samples=per_rank.cpu().tolist(), sets=calls, slots=min(slots, calls),
                   calls=calls, host_bound=round(host_paced / max(1, iters), 3),
                   spin_short=round(spin_short / max(1, iters), 3), spin_us=round(spin_us, 1),
                   spin_wanted_us=round(wanted_us, 1), **extra)

    def save_kept(self, cmd: dict) -> None:
        """Write the output the last timing block kept (to ``tag``; no tag: drop it), then hand a large cache back. A
        command of its own, sent after every block, so that moving the output to the host and writing it, and freeing
        device memory, which take times that vary with sizes and the page cache, are not in the judge's wall clock
        around the block (the cross-checks compare those clocks)."""
        kept, self._kept = self._kept, None
        if kept is not None and cmd.get("tag"):
            torch.save(outputs.portable(kept), os.path.join(self.args.out, f"{cmd['tag']}_r{self.rank}.pt"))
        del kept
        self._release_cache()
        self.reply(ok=True, seq=cmd["seq"])

    def _new_placement(self):
        """Hand the cache back and hold a random amount of device memory for the coming block (REPLACE_PAD_BYTES)."""
        if self.device_kind != "cuda":
            return None
        _empty_cache()
        return torch.empty(_randbelow(REPLACE_PAD_BYTES // 2**20 + 1) * 2**20, dtype=torch.uint8, device=self.device)

    def _l2_flush_buffer(self):
        if self.device_kind != "cuda":
            return None
        l2 = getattr(torch.cuda.get_device_properties(self.device), "L2_cache_size", 50 * 2**20)
        return torch.empty(2 * l2 // 4, dtype=torch.int32, device=self.device)

    def run(self) -> int:
        if not self.start():
            return 3
        for line in sys.stdin:
            cmd = json.loads(line)
            op = cmd["cmd"]
            if op == "exit":
                break
            try:
                if op == "trial":
                    self.trial(cmd)
                elif op == "time":
                    self.time(cmd)
                elif op == "kept":
                    self.save_kept(cmd)
                elif op == "check" and self.args.role == "ref":
                    self.check(cmd)
                elif op == "load":
                    self.load(cmd["problem"], cmd["candidate"], shape=_shape_of(cmd))
                elif op == "profile":  # profile mode (evaluator/profiling.py): a torch profiler trace of a few calls
                    from evaluator import profiling
                    profiling.rank_profile(self, cmd, _barrier, synchronize)
            except BaseException as exc:  # noqa: BLE001 - a candidate exception on this rank
                self.reply(ok=False, seq=cmd.get("seq"), **_failure(exc, self.candidate, self.args.role))
        # Leave at once: every result is already with the judge, and tearing down the process group and the
        # interpreter (NCCL communicators, the CUDA context, torch's atexit hooks) takes time the judge would wait for
        # and uses nothing of. The kernel frees the device memory and the sockets just the same.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def pin_to_cores(rank: int, world_size: int) -> None:
    """Rank r of every role runs on the same cores, so reference and candidate ranks see the same CPU speed."""
    if not hasattr(os, "sched_setaffinity"):
        return
    cpus = sorted(os.sched_getaffinity(0))
    per_rank = max(1, len(cpus) // max(1, world_size))
    start = (rank * per_rank) % len(cpus)
    try:
        os.sched_setaffinity(0, cpus[start:start + per_rank])
    except OSError:
        pass


_CYCLES_PER_US: list[float] = []


def _cycles_per_us() -> float:
    """The GPU clock as seen by torch.cuda._sleep, measured once per process, after ~1 ms of spinning: a clock
    still rising when measured reads low, and every spin then lasts less time than the judge asked for."""
    if not _CYCLES_PER_US:
        torch.cuda._sleep(2_000_000)
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        torch.cuda._sleep(4_000_000)
        end.record()
        torch.cuda.synchronize()
        _CYCLES_PER_US.append(4_000_000 / max(1.0, begin.elapsed_time(end) * 1e3))
    return _CYCLES_PER_US[0]


class _EventTimer:
    def start(self):
        self.begin = _CudaEvent(enable_timing=True)
        self.end = _CudaEvent(enable_timing=True)
        _record(self.begin)

    def stop(self):
        _record(self.end)

    def elapsed_ms(self) -> float:
        return _elapsed_time(self.begin, self.end)


class _WallTimer:
    def start(self):
        self.begin = _perf_counter()

    def stop(self):
        self.finish = _perf_counter()

    def elapsed_ms(self) -> float:
        return (self.finish - self.begin) * 1e3


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--role", choices=["ref", "cand"], required=True)
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--world-size", type=int, required=True)
    parser.add_argument("--device", choices=["cpu", "cuda"], required=True)
    parser.add_argument("--problem", required=True)
    parser.add_argument("--candidate", required=True)
    parser.add_argument("--M", type=int, default=1024)
    parser.add_argument("--N", type=int, default=1024)
    parser.add_argument("--dtype", default="bfloat16", choices=sorted(DTYPES))
    parser.add_argument("--reduced", action="store_true")
    parser.add_argument("--out", required=True)
    parser.add_argument("--reply-fd", type=int, required=True)
    parser.add_argument("--dist-timeout", type=float, default=600)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    return Worker(parse_args(argv)).run()


if __name__ == "__main__":
    sys.exit(main())
