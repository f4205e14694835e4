"""The program one rank runs: ``python -m evaluator.rank.worker --role ref|cand ...``: its command loop.

The judge starts W of these per role (reference ranks and candidate ranks are separate process groups, never the same
processes) and drives them with JSON commands on stdin; replies go back as JSON lines on the file descriptor given by
--reply-fd. Commands: ``trial`` (build inputs from a seed, run ``solution``; a candidate's ranks save their outputs as
tensor files in --out, a reference's ranks, asked to ``hold``, keep theirs on their device), ``check`` (reference ranks
only: compare the candidate's file for the held trial with the held output, see evaluator/rank/outputs.py), ``time``
(one timing block: evaluator/rank/timed.py), ``kept`` (write the output a timing block kept), ``load`` (switch problem:
trusted references in self-checks; or the job's problem and candidate, once, in a warm spare started with
``--problem -`` before the job was known), ``exit``.

Everything here runs in an untrusted process when the role is ``cand``: nothing it reports is believed without a
check (its outputs are compared by the reference's ranks, its timings cross-checked against the judge's own clock).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import cast

import torch
import torch.distributed as dist

import problems
from evaluator.process.protocol import DEFERRED
from evaluator.rank import messages, outputs, shared_device, timed, world
from evaluator.rank.clocks import (
    _all_reduce,
    _barrier,
    _empty_cache,
    _memory_reserved,
    _perf_counter,
    randbelow,
    synchronize,
)
from evaluator.rank.host import environment, pin_to_cores
from evaluator.rank.job import DTYPES, parse_args, resolve_solution, shape_of
from evaluator.timing.calibration import RELEASE_CACHE_BYTES, RELEASE_CACHE_SHARE
from problems.base import InputContext


# Above RELEASE_CACHE_BYTES of cached device memory (or a share of the device, whichever is larger) a rank hands its
# cache back after a command: the other role's ranks share the GPU and may need it (evaluator/timing/calibration.py).
def release_threshold(total_bytes: int) -> int:
    """The cached bytes above which a rank on a device of ``total_bytes`` hands its cache back (see above)."""
    return max(RELEASE_CACHE_BYTES, total_bytes // RELEASE_CACHE_SHARE)


# ``replace_memory`` blocks (an experiment, off unless the judge asks: Config.replace_memory): the cache is handed back
# and up to this many bytes, a random amount, are held before the block's inputs are built, so each block's data lands
# elsewhere in device memory. A/A runs found each process with a speed factor of its own (~2% SD, reference and
# candidate processes alike); if placement is the cause, blocks placed anew show it inside one pair, where the
# bootstrap can see it.
REPLACE_PAD_BYTES = 256 * 2**20


class Reply:
    def __init__(self, fd: int):
        self.stream = os.fdopen(fd, "w", buffering=1)

    def __call__(self, **fields) -> None:
        self.stream.write(json.dumps(fields) + "\n")
        self.stream.flush()


# Set when this rank runs in a shared-device world (evaluator/rank/shared_device.py): its memory bound, for messages.
SHARED_WORLD: dict | None = None


def _failure(exc: BaseException, candidate: str | None, role: str, loading: bool = False) -> dict:
    """The ``kind`` and ``error`` of a failure reply. A candidate's: the root cause in its author's terms
    (evaluator/rank/messages.py), the full traceback going to this rank's stderr, the owner's log. A reference's is the
    platform's own failure: the traceback as it is. Running out of device memory in a shared-device world is the
    shared world's limit (each rank holds a share of one GPU), and so is a device index other than cuda:0 there:
    not a verdict on the candidate's logic, a ``shared_world_limit`` failure that says so (the judge makes a
    candidate's ``unverified``, never infra_error: any candidate could claim it, and a claim must not buy a retry)."""
    traceback.print_exc(file=sys.stderr)
    sys.stderr.flush()
    if SHARED_WORLD is not None and shared_device.is_out_of_memory(exc):
        return {
            "kind": shared_device.LIMIT_KIND,
            "error": shared_device.out_of_memory_message(
                SHARED_WORLD["world_size"], SHARED_WORLD.get("memory_bound_bytes"), SHARED_WORLD.get("total_bytes")
            ),
        }
    if SHARED_WORLD is not None and shared_device.is_another_device(exc):
        return {
            "kind": shared_device.LIMIT_KIND,
            "error": shared_device.another_device_message(SHARED_WORLD["world_size"]),
        }
    if role != "cand":
        return {"kind": "compile_error" if loading else "runtime_error", "error": traceback.format_exc(limit=20)}
    path = candidate if candidate and os.path.isfile(candidate) else None
    return {"kind": messages.kind_of(exc, loading=loading), "error": messages.describe(exc, path)}


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
        try:
            self.device, backend, total, shared = world.join(
                self.rank, self.world_size, self.device_kind, self.args.dist_timeout
            )
        except Exception as exc:  # noqa: BLE001 - the harness failed to start, not the candidate
            self.reply(ok=False, kind="infra_error", error=f"process group init failed: {exc}")
            return False
        if total is not None:
            self.release_bytes = release_threshold(total)
        if shared is not None:
            self._share_device(shared, total)
        self.env = environment(backend) if self.rank == 0 else None
        if self.env is not None and shared:
            self.env.update(shared)
        self.reply(ok=True, event="initialized")  # before any candidate code runs (see protocol._accept)
        if self.args.problem == DEFERRED:  # a warm spare (evaluator/process/warm.py): the job comes with the first load
            self.reply(ok=True, event="ready", env=self.env)
            return True
        return self.load(self.args.problem, self.args.candidate, first=True)

    def _share_device(self, shared: dict, total: int | None) -> None:
        """A rank of a shared-device world (evaluator/rank/shared_device.py, set up by world.join): the release
        threshold follows its memory share, and its failures name the shared world's limits (SHARED_WORLD)."""
        global SHARED_WORLD
        self.release_bytes = min(self.release_bytes, max(1, shared["memory_bound_bytes"] // 4))
        SHARED_WORLD = dict(shared, world_size=self.world_size, total_bytes=total)

    def load(self, problem_key, candidate: str, first: bool = False, shape: dict | None = None) -> bool:
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
    def context(self, seed: int, trial: int, M: int | None = None, N: int | None = None) -> InputContext:
        return InputContext(
            rank=self.rank,
            world_size=self.world_size,
            M=M or self.args.M,
            N=N or self.args.N,
            dtype=self.dtype,
            device=self.device,
            seed_base=seed,
            trial=trial,
            problem_id=self.problem.id,
            reduced=self.args.reduced,
            groups=self.groups,
        )

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
            self.reply(
                ok=True,
                seq=cmd["seq"],
                ms=elapsed_ms,
                build_ms=build_ms,
                shapes=outputs.describe(output),
                nbytes=outputs.nbytes(output),
            )
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
            entry = outputs.check_file(
                self.problem, held[1], os.path.join(cmd["dir"], os.path.basename(name)), self.rank, self.world_size
            )
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
        """One timing block (evaluator/rank/timed.py, ``time_block``): ``warmup`` untimed calls then ``iters`` timed
        ones, each call on its own input set, built from the block's seed; the samples are the slowest rank's."""
        seed, trial, warmup, iters = cmd["seed"], cmd["trial"], cmd["warmup"], cmd["iters"]
        calls = warmup + iters
        pad = self._new_placement() if cmd.get("replace_memory") else None  # noqa: F841 - held for the block
        sets = timed.InputSets(
            lambda k: list(self.problem.make_inputs(self.context(timed.timing_set_seed(seed, k), trial))),
            calls,
            timed.POOL_BYTES[self.device_kind],
        )
        keep = "tag" in cmd
        try:
            block = timed.time_block(
                self.solution,
                sets,
                warmup,
                iters,
                self.device_kind,
                self._l2_flush_buffer(),
                cmd.get("spin_us", 0.0),
                bool(cmd.get("spin_exact")),
                keep,
                self.host_us,
            )
        except timed.BadOutput as exc:
            self.reply(ok=False, kind="incorrect", error=str(exc), seq=cmd["seq"])
            return
        slots = sets.slots
        del sets
        # The cache is handed back (if large) by the ``kept`` command that follows every block, off the judge's clock.
        # The slowest rank defines the iteration: collectives finish together, compute may not.
        per_rank = torch.tensor(block.samples, dtype=torch.float64, device=self.device)
        _all_reduce(per_rank, op=dist.ReduceOp.MAX)
        extra = {}
        self._kept = block.kept  # written by the next command, ``kept``: outside the judge's clock around this block
        if keep:
            call = cast(int, block.kept_call)  # set when keeping: the first timed call is kept unless a later one is
            extra = {"kept_call": call, "kept_seed": timed.timing_set_seed(seed, call)}
        # Every call had an input set of its own (``sets``); ``slots`` of them were alive at once.
        self.reply(
            ok=True,
            seq=cmd["seq"],
            samples=per_rank.cpu().tolist(),
            sets=calls,
            slots=min(slots, calls),
            calls=calls,
            host_bound=round(block.host_paced / max(1, iters), 3),
            spin_short=round(block.spin_short / max(1, iters), 3),
            spin_us=round(block.spin_us, 1),
            spin_wanted_us=round(block.wanted_us, 1),
            **extra,
        )

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
        return torch.empty(randbelow(REPLACE_PAD_BYTES // 2**20 + 1) * 2**20, dtype=torch.uint8, device=self.device)

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
                    self.load(cmd["problem"], cmd["candidate"], shape=shape_of(cmd))
                elif op == "profile":  # profile mode (evaluator/rank/profiling.py): a torch profiler trace
                    from evaluator.rank import profiling

                    profiling.rank_profile(self, cmd, _barrier, synchronize)
            except BaseException as exc:  # noqa: BLE001 - a candidate exception on this rank
                self.reply(ok=False, seq=cmd.get("seq"), **_failure(exc, self.candidate, self.args.role))
        # Leave at once: every result is already with the judge, and tearing down the process group and the
        # interpreter (NCCL communicators, the CUDA context, torch's atexit hooks) takes time the judge would wait for
        # and uses nothing of. The kernel frees the device memory and the sockets just the same.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def main(argv=None) -> int:
    return Worker(parse_args(argv, description=__doc__)).run()


if __name__ == "__main__":
    sys.exit(main())
