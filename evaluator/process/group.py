"""A group of W rank processes (one role: reference or candidate), driven by JSON commands.

Each rank is its own process, in its own process session so that the whole group (and anything it spawned) can be
killed at once on a timeout, a deadlock or the end of the job. Replies come back on a private pipe; stdout and stderr
go to files whose tails end up in the result. How one rank's process is started: evaluator/process/spawn.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import time
from typing import IO, TypedDict, cast

from evaluator.contract import schema
from evaluator.process import builds, processes, protocol, sandbox, spawn
from evaluator.process.protocol import CandidateFault, Rank

LOG_TAIL_BYTES = 8192


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class GroupShape(TypedDict):
    """The keyword arguments of :class:`RankGroup` that a pair's two groups share: their world and the problem's
    shape (a warm spare's, a self-check session's)."""

    world_size: int
    device: str
    problem: str
    M: int
    N: int
    dtype: str
    reduced: bool


class RankGroup:
    def __init__(
        self,
        role: str,
        world_size: int,
        device: str,
        problem: str,
        candidate: str,
        workdir: str,
        M: int,
        N: int,
        dtype: str,
        reduced: bool,
        trusted: bool,
        isolate: bool = True,
        required: bool = False,
        build_device: str | None = None,
    ):
        self.role = role
        self.world_size = world_size
        self.workdir = workdir
        self.trusted = trusted
        self.ranks: list[Rank] = []
        self.seq = 0
        self.closed = False
        self.killed = False
        self.held = False  # stopped by pause()
        self.sandbox_report: dict = {}
        self.device = device
        # The device whose build cache the group's builds are keyed for: its own, or for the build stage
        # (evaluator/judge/prebuild.py), which runs on CPU cores, the GPU job's that will load them.
        self.build_device = build_device or device
        # Untrusted groups build in one directory for all their ranks, seeded from the judge's cache of earlier
        # jobs of the same file (evaluator/process/builds.py); the reference never compiles.
        self.build_dir: str | None = None if trusted else os.path.join(workdir, "build")
        self.build_key: str | None = None
        self.build_restored = False
        # Untrusted ranks get a sandbox (evaluator/process/sandbox.py; a required one that the host cannot give raises
        # SandboxUnavailable here, before anything starts); trusted ones only the scrubbed environment.
        # Directories: the group's own is root-only for trusted groups; for a sandboxed one it can be traversed, its
        # out/, rank*/ and tmp/ belong to the candidate's uid, logs/ and src/ stay the judge's, so the candidate can
        # neither swap the log files the judge reads back nor rename out/. Inside the filesystem view a rank sees
        # src/ read-only, out/ and its own rank directory read-write, and nothing else of the job.
        self.sandbox = None if trusted else sandbox.Sandbox(enabled=isolate, required=required, world_size=world_size)
        os.makedirs(workdir, exist_ok=True)
        os.chmod(workdir, 0o700 if trusted else 0o711)
        port = free_port()
        out_dir = os.path.join(workdir, "out")
        log_dir = os.path.join(workdir, "logs")
        os.makedirs(out_dir, exist_ok=True)
        os.makedirs(log_dir, exist_ok=True)
        os.chmod(log_dir, 0o700)
        self.out_dir = out_dir
        self.src_dir = os.path.join(workdir, "src")
        if self.sandbox is not None:
            assert self.build_dir is not None  # an untrusted group's, as its box is
            self.sandbox.prepare(workdir)
            self.sandbox.own(out_dir)
            os.makedirs(self.build_dir, exist_ok=True)
            self.sandbox.own(self.build_dir)
            os.makedirs(self.src_dir, exist_ok=True)
            os.chmod(self.src_dir, 0o755)
            candidate = self._private_copy(candidate)
        try:
            for rank in range(world_size):
                self.ranks.append(
                    spawn.start_rank(
                        self, rank, role, world_size, device, problem, candidate, M, N, dtype, reduced, port, log_dir
                    )
                )
        except BaseException:
            self.kill()
            raise

    def _private_copy(self, candidate: str) -> str:
        """The candidate's source, copied into a directory the judge owns: readable by the sandbox user whatever the
        upload's permissions, and not modifiable by it."""
        if candidate == "reference" or candidate.startswith("null:") or not os.path.isfile(candidate):
            return candidate
        os.makedirs(self.src_dir, exist_ok=True)
        os.chmod(self.src_dir, 0o755)
        copy = os.path.join(self.src_dir, os.path.basename(candidate))
        shutil.copyfile(candidate, copy)
        os.chmod(copy, 0o644)
        if self.sandbox is not None and self.build_dir and not self.build_restored:
            self.build_key = builds.key(copy, self.build_device)
            self.build_restored = builds.restore(self.build_key, self.build_dir, self.sandbox.uid)
        return copy

    def load_command(self, problem: str, candidate: str, shape: dict | None = None) -> dict:
        """The ``load`` that switches the ranks to ``problem`` and ``candidate`` (a self-check's next problem, or a
        warm spare's job, with that job's ``shape``: M, N, dtype, reduced). A sandboxed group reads a private copy."""
        if self.sandbox is not None:
            candidate = self._private_copy(candidate)
        return dict(shape or {}, cmd="load", problem=problem, candidate=candidate)

    # --- isolation ----------------------------------------------------------------------------------------------------
    def signal(self, sig: int) -> None:
        """Send ``sig`` to every rank's process group (its session): enough where no candidate code has run yet,
        since only that could have left processes elsewhere (see pause for a group that ran a candidate)."""
        for r in self.ranks:
            processes.signal_group(r.proc.pid, sig)

    def pause(self) -> None:
        """Stop every process of the group while the other group runs. For a sandboxed candidate this is isolation
        (it can neither watch the reference's files nor compete with it; daemons of its uid are stopped too). For
        any group it is also fairness: an idle group's background threads (NCCL's proxy and watchdog) share the
        CPU cores of the running one's ranks, and stopping only the candidate's slowed the candidate's host side
        alone (A/A on an H200; docs/calibration.md, history)."""
        if self.closed or self.held:
            return
        with self.acting("freeze"):
            if self.sandbox is not None and self.sandbox.enabled:
                self.sandbox.pause(r.proc.pid for r in self.ranks)
            else:
                self.signal(signal.SIGSTOP)
        self.held = True

    def resume(self) -> None:
        if not self.held:
            return
        self.held = False
        with self.acting("thaw"):
            if self.sandbox is not None and self.sandbox.enabled:
                self.sandbox.resume(r.proc.pid for r in self.ranks)
            else:
                self.signal(signal.SIGCONT)

    def candidate_ran(self) -> bool:
        """An untrusted group past process-group start-up: its candidate's code may have run, and may have left
        anything behind in its processes, pipes, files and box."""
        return not self.trusted and any(r.initialized for r in self.ranks)

    @contextlib.contextmanager
    def acting(self, what: str):
        """Around every step the judge takes on this group (freeze, thaw, read its replies, kill, clean up): once the
        candidate's code may have run, whatever goes wrong there is the candidate's doing (docs/threat-model.md,
        attribution), raised as CandidateFault; before that, or for a trusted group, it stays the platform's.
        GroupFailure passes unchanged: protocol.collect has already said whose it is."""
        try:
            yield
        except (CandidateFault, protocol.GroupFailure):
            raise
        except Exception as exc:
            if not self.candidate_ran():
                raise
            raise CandidateFault(
                f"the judge could not {what} the candidate's processes: {type(exc).__name__}: {exc}"
            ) from exc

    def sandbox_notes(self) -> dict:
        return dict(self.sandbox.notes) if self.sandbox is not None else {}

    # --- protocol ---------------------------------------------------------------------------------------------------
    def send(self, cmd: dict) -> int:
        self.seq += 1
        payload = (json.dumps(dict(cmd, seq=self.seq)) + "\n").encode()
        for r in self.ranks:
            try:
                _stdin(r).write(payload)
                _stdin(r).flush()
            except (BrokenPipeError, OSError):
                pass  # noticed by collect() as an early exit
        return self.seq

    def collect(self, timeout: float, expect_seq: int | None = None, grace: float = 3.0) -> list[dict]:
        """Wait for one reply per rank (evaluator/process/protocol.py): GroupFailure on an error reply, an early exit
        or the deadline. A box that reached its memory limit says so, whatever its ranks said as they died."""
        try:
            with self.acting("read the replies of"):
                return protocol.collect(self.ranks, self.trusted, timeout, expect_seq, grace)
        except protocol.GroupFailure as exc:
            if self.sandbox is not None and self.sandbox.out_of_memory():
                raise protocol.GroupFailure(
                    schema.RUNTIME_ERROR,
                    f"{self.sandbox.memory_message()} (the kernel killed it inside its box; {exc.message})",
                    exc.rank,
                ) from exc
            raise

    def command(self, cmd: dict, timeout: float) -> list[dict]:
        seq = self.send(cmd)
        return self.collect(timeout, expect_seq=seq)

    # --- teardown ---------------------------------------------------------------------------------------------------
    def close(self, timeout: float = 10.0) -> None:
        """Ask politely, then kill every process session of the group; no process is left behind."""
        close_all([self], timeout)

    def request_exit(self) -> None:
        """Tell every rank to exit (it leaves at once, without tearing down its process group: see
        evaluator/rank/worker.py)."""
        if self.closed:
            return
        self.closed = True
        self.send({"cmd": "exit"})
        for r in self.ranks:
            try:
                _stdin(r).close()
            except OSError:
                pass

    def kill(self) -> None:
        self.closed = True
        if self.killed:
            return
        self.killed = True
        for r in self.ranks:
            try:
                os.killpg(r.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for r in self.ranks:
            try:
                r.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.close(r.reply_fd)
            except OSError:
                pass
        if self.sandbox is not None:
            with self.acting("kill and clean up after"):
                try:
                    # Everything the candidate's uid still runs (double-forked daemons escape killpg), then its
                    # leftovers.
                    self.sandbox_report = self.sandbox.cleanup()
                    # Only now, with nothing of the candidate left running to change it under the copy (never from a
                    # box whose clean-up failed), and before close() unmounts the group's scratch.
                    if not self.sandbox.failures and self.build_dir is not None:
                        self._builds = self._read_build_report()  # the build log too, while it is there
                        builds.harvest(self.build_key, self.build_dir)
                finally:
                    self.sandbox.close()  # whatever the clean-up met: the box is closed

    def build_report(self) -> dict:
        """The group's builds (evaluator/process/builds.py): compiled here, loaded already built, taken from the
        cache. Read once the candidate's processes are gone and before its scratch is (kill), else now."""
        if not self.build_dir:
            return {}
        return getattr(self, "_builds", None) or self._read_build_report()

    def _read_build_report(self) -> dict:
        if not self.build_dir:
            return {}
        # The build log is the candidate's file: read only if it is a plain one (a FIFO would block the judge for
        # good), and a log that cannot be parsed is reported as such, never raised out of the judge's clean-up.
        empty = {"compiled": 0, "loaded_built": 0, "failed": 0, "compile_s": 0.0, "fingerprints": []}
        try:
            mode = os.lstat(os.path.join(self.build_dir, builds.LOG_NAME)).st_mode
        except OSError:
            mode = None
        if mode is not None and not stat.S_ISREG(mode):
            return dict(empty, from_cache=self.build_restored, unreadable="the build log is not a plain file")
        try:
            report = builds.report(self.build_dir)
        except Exception as exc:  # noqa: BLE001 - RecursionError from a nested line included
            report = dict(empty, unreadable=f"the build log could not be read ({type(exc).__name__})")
        return dict(report, from_cache=self.build_restored)

    def logs(self) -> list[dict]:
        return [
            {
                "role": "candidate" if self.role == "cand" else "reference",
                "rank": r.rank,
                "exit_code": r.proc.returncode,
                "stdout": _tail(r.stdout_path),
                "stderr": _tail(r.stderr_path),
            }
            for r in self.ranks
        ]


def close_all(groups: list, timeout: float = 10.0) -> None:
    """Close several groups at once: every rank of every group is told to exit first, then all are waited for
    together and killed. Closing them one after another would add each group's exit time to the judge's wall.
    A failure to kill or clean up one group never stops the others' clean-up: the first failure is raised once all
    are done (a CandidateFault for a candidate's group whose code ran: see RankGroup.acting)."""
    groups = [g for g in groups if g is not None]
    for group in groups:
        group.request_exit()
    end = time.monotonic() + timeout
    for group in groups:
        for r in group.ranks:
            try:
                r.proc.wait(max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
    failure: BaseException | None = None
    for group in groups:
        try:
            group.kill()
        except Exception as exc:  # noqa: BLE001 - raised below, after every group was closed
            failure = failure or exc
    if failure is not None:
        raise failure


def _stdin(r: Rank) -> IO[bytes]:
    """A rank's command pipe: every rank starts with one (evaluator/process/spawn.py)."""
    return cast("IO[bytes]", r.proc.stdin)


def _tail(path: str, limit: int = LOG_TAIL_BYTES) -> str:
    """The last ``limit`` bytes of a rank's log: read from a plain file only (never a link or a FIFO, should a
    process of the rank's have replaced it), and never more than ``limit`` bytes however large it grew."""
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return ""
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            data = f.read(limit)
    except OSError:
        return ""
    text = data.decode("utf-8", "replace")
    return ("[... truncated ...]\n" + text) if size > limit else text
