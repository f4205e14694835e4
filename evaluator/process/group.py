"""A group of W rank processes (one role: reference or candidate), driven by JSON commands.

Each rank is its own process, in its own process session so that the whole group (and anything it spawned) can be
killed at once on a timeout, a deadlock or the end of the job. Replies come back on a private pipe; stdout and stderr
go to files whose tails end up in the result.
"""
from __future__ import annotations

import dataclasses
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time
from typing import Optional

from evaluator.process import builds, processes, sandbox

LOG_TAIL_BYTES = 8192


class GroupFailure(Exception):
    """A command did not complete on every rank. ``kind`` is a verdict-like word; ``rank`` the first rank at fault."""

    def __init__(self, kind: str, message: str, rank: Optional[int] = None):
        super().__init__(message)
        self.kind = kind
        self.rank = rank
        self.message = message


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclasses.dataclass
class _Rank:
    rank: int
    proc: subprocess.Popen
    reply_fd: int
    buffer: bytes = b""
    stdout_path: str = ""
    stderr_path: str = ""
    initialized: bool = False  # past process-group init: the candidate's code may have run since


class RankGroup:
    def __init__(self, role: str, world_size: int, device: str, problem: str, candidate: str, workdir: str,
                 M: int, N: int, dtype: str, reduced: bool, trusted: bool, isolate: bool = True,
                 required: bool = False):
        self.role = role
        self.world_size = world_size
        self.workdir = workdir
        self.trusted = trusted
        self.ranks: list[_Rank] = []
        self.seq = 0
        self.closed = False
        self.killed = False
        self.held = False  # stopped by pause()
        self.sandbox_report: dict = {}
        self.device = device
        # Untrusted groups build in one directory for all their ranks, seeded from the judge's cache of earlier
        # jobs of the same file (evaluator/process/builds.py); the reference never compiles.
        self.build_dir: Optional[str] = None if trusted else os.path.join(workdir, "build")
        self.build_key: Optional[str] = None
        self.build_restored = False
        # Untrusted ranks get a sandbox (evaluator/process/sandbox.py; a required one that the host cannot give raises
        # SandboxUnavailable here, before anything starts); trusted ones only the scrubbed environment.
        # Directories: the group's own is root-only for trusted groups; for a sandboxed one it can be traversed, its
        # out/, rank*/ and tmp/ belong to the candidate's uid, logs/ and src/ stay the judge's, so the candidate can
        # neither swap the log files the judge reads back nor rename out/. Inside the filesystem view a rank sees
        # src/ read-only, out/ and its own rank directory read-write, and nothing else of the job.
        self.sandbox = None if trusted else sandbox.Sandbox(enabled=isolate, required=required)
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
            self.sandbox.prepare(workdir)
            self.sandbox.own(out_dir)
            os.makedirs(self.build_dir, exist_ok=True)
            self.sandbox.own(self.build_dir)
            os.makedirs(self.src_dir, exist_ok=True)
            os.chmod(self.src_dir, 0o755)
            candidate = self._private_copy(candidate)
        try:
            for rank in range(world_size):
                self._spawn(rank, role, world_size, device, problem, candidate, M, N, dtype, reduced, port, log_dir)
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
        if self.build_dir and not self.build_restored:
            self.build_key = builds.key(copy, self.device)
            self.build_restored = builds.restore(self.build_key, self.build_dir, self.sandbox.uid)
        return copy

    def _spawn(self, rank, role, world_size, device, problem, candidate, M, N, dtype, reduced, port, log_dir):
        read_fd, write_fd = os.pipe()
        rank_dir = os.path.join(self.workdir, f"rank{rank}")
        os.makedirs(rank_dir, exist_ok=True)
        stdout_path = os.path.join(log_dir, f"rank{rank}.stdout.log")
        stderr_path = os.path.join(log_dir, f"rank{rank}.stderr.log")
        argv = [sys.executable, "-m", "evaluator.rank.worker", "--role", role, "--rank", str(rank),
                "--world-size", str(world_size), "--device", device, "--problem", str(problem),
                "--candidate", candidate, "--M", str(M), "--N", str(N), "--dtype", dtype,
                "--out", self.out_dir, "--reply-fd", str(write_fd)] + (["--reduced"] if reduced else [])
        box = self.sandbox
        if box is None:
            env = sandbox.rank_environment(rank, world_size, port, rank_dir, trusted=True)
            preexec = sandbox.die_with_judge
        else:
            env = sandbox.rank_environment(rank, world_size, port, rank_dir, trusted=False,
                                           loopback_only=box.loopback_only, user=box.user_name,
                                           build_dir=self.build_dir)
            box.own(rank_dir)
            preexec = box.preexec()
            argv = box.command(argv, rank_dir, writable=[self.out_dir, self.build_dir], readable=[self.src_dir])
        try:
            with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
                proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out, stderr=err, env=env, cwd=rank_dir,
                                        pass_fds=(write_fd,), start_new_session=True, preexec_fn=preexec)
        finally:
            os.close(write_fd)
        os.set_blocking(read_fd, False)
        self.ranks.append(_Rank(rank, proc, read_fd, stdout_path=stdout_path, stderr_path=stderr_path))

    def load_command(self, problem: str, candidate: str, shape: Optional[dict] = None) -> dict:
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
        if self.sandbox is not None and self.sandbox.enabled:
            self.sandbox.pause(r.proc.pid for r in self.ranks)
        else:
            self.signal(signal.SIGSTOP)
        self.held = True

    def resume(self) -> None:
        if not self.held:
            return
        self.held = False
        if self.sandbox is not None and self.sandbox.enabled:
            self.sandbox.resume(r.proc.pid for r in self.ranks)
        else:
            self.signal(signal.SIGCONT)

    def sandbox_notes(self) -> dict:
        return dict(self.sandbox.notes) if self.sandbox is not None else {}

    # --- protocol ---------------------------------------------------------------------------------------------------
    def send(self, cmd: dict) -> int:
        self.seq += 1
        payload = (json.dumps(dict(cmd, seq=self.seq)) + "\n").encode()
        for r in self.ranks:
            try:
                r.proc.stdin.write(payload)
                r.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                pass  # noticed by collect() as an early exit
        return self.seq

    def collect(self, timeout: float, expect_seq: Optional[int] = None, grace: float = 3.0) -> list[dict]:
        """Wait for one reply per rank. Raises GroupFailure on an error reply, an early exit or the deadline.

        After the first failure the other ranks get a short grace period (they are usually blocked in a collective
        with the failed rank); the failure reported is the root cause: a rank that died without answering, or one
        that raised its own error, rather than the peers whose collectives broke because of it.
        """
        replies: dict[int, dict] = {}
        failures: list[GroupFailure] = []
        deadline = time.monotonic() + timeout
        selector = selectors.DefaultSelector()
        for r in self.ranks:
            selector.register(r.reply_fd, selectors.EVENT_READ, r)

        def fail(failure: GroupFailure) -> None:
            nonlocal deadline
            failures.append(failure)
            deadline = min(deadline, time.monotonic() + grace)

        try:
            while len(replies) < self.world_size:
                now = time.monotonic()
                if now >= deadline:
                    if failures:
                        break
                    missing = [r.rank for r in self.ranks if r.rank not in replies]
                    if not self.trusted and not all(r.initialized for r in self.ranks):
                        stuck = [r.rank for r in self.ranks if not r.initialized]
                        raise GroupFailure("infra_error", f"ranks {stuck} did not finish process-group start-up "
                                                          f"within {timeout:.0f} s (before any candidate code ran)",
                                           stuck[0])
                    raise GroupFailure("timeout", f"ranks {missing} did not answer within {timeout:.0f} s "
                                                  "(hang or distributed deadlock); the process group was killed",
                                       missing[0])
                for key, _ in selector.select(timeout=min(0.2, max(0.0, deadline - now))):
                    r = key.data
                    for reply in self._read(r):
                        self._accept(r, reply, expect_seq, replies, fail)
                for r in self.ranks:
                    if r.rank not in replies and r.proc.poll() is not None:
                        for reply in self._read(r):  # what it said before dying
                            self._accept(r, reply, expect_seq, replies, fail)
                        if r.rank not in replies:
                            replies[r.rank] = {"ok": False}
                            # Dying before process-group init is the platform's problem: no candidate code ran yet.
                            kind = "exited" if self.trusted or r.initialized else "infra_error"
                            fail(GroupFailure(kind, _exit_message(r.rank, r.proc.returncode), r.rank))
            if failures:
                raise _root_cause(failures)
            return [replies[r.rank] for r in self.ranks]
        finally:
            selector.close()

    def _accept(self, r: _Rank, reply: dict, expect_seq, replies: dict, fail) -> None:
        if reply.get("event") == "initialized":  # process group up; the candidate's module is loaded next
            r.initialized = True
            return
        if expect_seq is not None and reply.get("seq") not in (None, expect_seq):
            fail(GroupFailure("protocol", f"rank {r.rank} answered out of turn (seq {reply.get('seq')})", r.rank))
            return
        if r.rank in replies:
            return
        replies[r.rank] = reply
        if not reply.get("ok"):
            kind = reply.get("kind", "runtime_error")
            if kind == "infra_error" and not self.trusted and r.initialized:
                # Once the candidate's code has run in this process it can write any reply; a claim that the
                # platform failed is believed only before that (process-group init), never from the candidate.
                kind = "runtime_error"
            fail(GroupFailure(kind, reply.get("error", "failed"), r.rank))

    def command(self, cmd: dict, timeout: float) -> list[dict]:
        seq = self.send(cmd)
        return self.collect(timeout, expect_seq=seq)

    def _read(self, r: _Rank) -> list[dict]:
        out = []
        while True:
            try:
                chunk = os.read(r.reply_fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                break
            if not chunk:
                break
            r.buffer += chunk
        while b"\n" in r.buffer:
            line, r.buffer = r.buffer.split(b"\n", 1)
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({"ok": False, "kind": "protocol", "error": f"unreadable reply: {line[:200]!r}"})
        return out

    # --- teardown ---------------------------------------------------------------------------------------------------
    def close(self, timeout: float = 10.0) -> None:
        """Ask politely, then kill every process session of the group; no process is left behind."""
        close_all([self], timeout)

    def request_exit(self) -> None:
        """Tell every rank to exit (it leaves at once, without tearing down its process group: see evaluator/rank/worker.py)."""
        if self.closed:
            return
        self.closed = True
        self.send({"cmd": "exit"})
        for r in self.ranks:
            try:
                r.proc.stdin.close()
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
            # Everything the candidate's uid still runs (double-forked daemons escape killpg), then its leftovers.
            self.sandbox_report = self.sandbox.cleanup()
            self.sandbox.close()
            # Only now, with nothing of the candidate left running to change it under the copy.
            builds.harvest(self.build_key, self.build_dir)

    def build_report(self) -> dict:
        """The group's builds (evaluator/process/builds.py): compiled here, loaded already built, taken from the cache."""
        if not self.build_dir:
            return {}
        return dict(builds.report(self.build_dir), from_cache=self.build_restored)

    def logs(self) -> list[dict]:
        return [{"role": "candidate" if self.role == "cand" else "reference", "rank": r.rank,
                 "exit_code": r.proc.returncode,
                 "stdout": _tail(r.stdout_path), "stderr": _tail(r.stderr_path)} for r in self.ranks]


# Text of errors that a rank raises only because a peer failed (its collective lost the other side).
_PEER_FAILURE_MARKERS = ("Connection closed by peer", "Connection reset", "remote worker", "Broken pipe",
                         "communicator was aborted", "NCCL Error", "ncclRemoteError", "Socket Timeout",
                         "Connection refused", "peer", "Timed out")


def close_all(groups: list, timeout: float = 10.0) -> None:
    """Close several groups at once: every rank of every group is told to exit first, then all are waited for
    together and killed. Closing them one after another would add each group's exit time to the judge's wall."""
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
    for group in groups:
        group.kill()


def _root_cause(failures: list[GroupFailure]) -> GroupFailure:
    def rank_order(f: GroupFailure) -> int:
        if f.kind in ("exited",):
            return 0
        if any(marker in f.message for marker in _PEER_FAILURE_MARKERS):
            return 2
        return 1

    best = sorted(failures, key=rank_order)[0]
    others = sorted({f.rank for f in failures if f is not best and f.rank is not None})
    if others:
        best.message += f"\n(ranks {others} failed afterwards, as their peers were gone)"
    return best


def _exit_message(rank: int, code: Optional[int]) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        return f"rank {rank} was killed by {name} before answering"
    return f"rank {rank} exited early with status {code} before answering"


def _tail(path: str, limit: int = LOG_TAIL_BYTES) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            data = f.read()
    except OSError:
        return ""
    text = data.decode("utf-8", "replace")
    return ("[... truncated ...]\n" + text) if size > limit else text
