"""Trusted rank processes forked from a server that has imported torch already.

A rank started as a fresh interpreter spends most of its start importing torch (about 1.4 CPU-seconds on the CPU
hosts): on a CPU world that is most of a judgement's cost. Reference ranks and null answers run the judge's own code,
so a server started once per judge process imports the rank program and forks one child per trusted rank; the child
becomes that rank (its own session, environment, files, working directory and cores) and runs the rank program's
main as ``python -m evaluator.rank.worker`` would (the child's side: evaluator/rank/forked_child.py). Here: the
judge's side (starting the server, asking it for ranks, holding them) and the server's (forking, reaping). Candidate
ranks never come from here: they start fresh inside their box (evaluator/process/sandbox.py).

What stays as with a fresh process:
- the judge holds each rank as it holds a subprocess (pid, which is also its process group, stdin, poll, wait,
  returncode), so pausing, killing and the reply pipe work unchanged;
- death with the judge: the server leaves, killing its children, once its parent is gone (it polls, so a judge
  thread that ends does not take it along), and each child dies with the server (a parent-death signal);
- nothing of the judge's environment reaches a rank: the server starts with the ranks' allow-listed environment
  and each child replaces it with its own before anything runs.
What differs: /proc/<pid>/environ of a forked rank shows the server's environment, not the rank's.

On by default for CPU worlds, where the imports it saves compete for a few cores; ``PKB_REFERENCE_FORKS=0`` turns it
off, ``=1`` on for every device. GPU hosts keep fresh processes by default: with many cores a fresh rank's imports
run beside the others', so a one-shot judgement there gains nothing and starts a little later (docs/testing.md has
the side-by-side numbers; the forked reference timed as the fresh one did). Any failure of the server (it would not
start, died, did not answer) falls back to a fresh process: it is never the candidate's fault.
"""

from __future__ import annotations

import atexit
import collections
import importlib
import json
import logging
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from types import ModuleType

from evaluator.process import environment

log = logging.getLogger(__name__)

SWITCH = "PKB_REFERENCE_FORKS"
# What a forked child runs: named on the server's command line, as a fresh rank's program is on its own (group.py),
# and imported by the server alone; the judge never imports a rank's code.
CHILD_PROGRAM = "evaluator.rank.forked_child"
# Where a forked rank finds its reply pipe (the rank program's --reply-fd), put there by evaluator/rank/forked_child.py.
REPLY_FD = 3
# The first answer waits for the server's own imports; a server slower than this is treated as broken.
ANSWER_TIMEOUT_S = 120.0
PARENT_POLL_S = 0.5
MAX_MESSAGE = 1 << 20
# The pid of a rank whose request the server never answered: above any pid Linux gives (pid_max is at most 2**22),
# so that signalling it finds no process rather than another's.
NO_PROCESS = 2**31 - 1


class ForkServerError(RuntimeError):
    pass


def enabled(device: str) -> bool:
    switch = os.environ.get(SWITCH, "")
    if switch in ("0", "1"):
        return switch == "1"
    return device == "cpu"  # see the module docstring


# --- the judge's side -------------------------------------------------------------------------------------------------
class ForkedProcess:
    """A forked rank, held like subprocess.Popen: its exit status comes back from the server on a pipe of its own.
    Its pid is the server's answer, read when first asked for, so that starting a group never waits for the server
    (whose first answer follows its own imports) while the other group's fresh processes could be starting."""

    def __init__(self, server: ForkServer, stdin_fd: int, status_fd: int):
        self._server = server
        self._pid: int | None = None
        self.stdin = os.fdopen(stdin_fd, "wb")
        self.returncode: int | None = None
        self.server_lost = False
        self._status_fd: int | None = status_fd

    @property
    def pid(self) -> int:
        if self._pid is None:
            self._server.resolve(self)
            assert self._pid is not None  # resolve answers every request up to this one's
        return self._pid

    def poll(self) -> int | None:
        if self.returncode is None:
            self._read_status(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self._read_status(timeout)
            if self.returncode is None:
                raise subprocess.TimeoutExpired("a forked rank", timeout or 0.0)  # no timeout: it waited for one
        return self.returncode

    def _read_status(self, timeout: float | None) -> None:
        if self._status_fd is None:
            return
        ready, _, _ = select.select([self._status_fd], [], [], timeout)
        if not ready:
            return
        data = os.read(self._status_fd, 32)
        # No status at all: the server itself is gone, and its children died with it (the platform's failure, not
        # anything the rank's own work or a candidate did to it: see protocol.collect).
        self.server_lost = not data.strip()
        self.returncode = -signal.SIGKILL if self.server_lost else int(data)
        os.close(self._status_fd)
        self._status_fd = None

    def __del__(self):
        if self._status_fd is not None:
            try:
                os.close(self._status_fd)
            except OSError:
                pass


class ForkServer:
    def __init__(self) -> None:
        home = tempfile.mkdtemp(prefix="pkb-forkserver-")  # root-only, the server's HOME and TMPDIR
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            env = environment.shared_environment(home)
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "evaluator.process.forkserver", str(theirs.fileno()), CHILD_PROGRAM],
                pass_fds=[theirs.fileno()],
                env=env,
                cwd=home,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
            )
        except BaseException:
            ours.close()
            shutil.rmtree(home, ignore_errors=True)
            raise
        finally:
            theirs.close()
        self.home = home
        self.sock = ours
        self.sock.settimeout(ANSWER_TIMEOUT_S)
        self.lock = threading.Lock()
        self.unanswered: collections.deque = collections.deque()  # requests sent, in order: the server answers so

    def alive(self) -> bool:
        return self.proc.poll() is None

    def spawn(
        self, args: list, env: dict, cwd: str, stdout_path: str, stderr_path: str, reply_fd: int
    ) -> ForkedProcess:
        """A rank running ``python -m evaluator.rank.worker *args`` (whose --reply-fd must be REPLY_FD). Raises
        ForkServerError if the request cannot be sent (the caller then starts a fresh process)."""
        stdin_r, stdin_w = os.pipe()
        status_r, status_w = os.pipe()
        request = json.dumps(
            {"args": [str(a) for a in args], "env": env, "cwd": cwd, "cores": sorted(os.sched_getaffinity(0))}
        ).encode()
        try:
            with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err, self.lock:
                socket.send_fds(self.sock, [request], [stdin_r, out.fileno(), err.fileno(), reply_fd, status_w])
                proc = ForkedProcess(self, stdin_w, status_r)
                self.unanswered.append(proc)
        except OSError as exc:
            for fd in (stdin_w, status_r):
                os.close(fd)
            raise ForkServerError(f"the fork server took no request: {exc}") from exc
        finally:
            os.close(stdin_r)
            os.close(status_w)
        return proc

    def resolve(self, proc: ForkedProcess) -> None:
        """Read the server's answers in order up to ``proc``'s. A request the server never answered (it died, or
        stopped answering and is killed here) gets NO_PROCESS: its rank is gone, and its status pipe says so."""
        with self.lock:
            while proc._pid is None and self.unanswered:
                try:
                    answer = self.sock.recv(4096)
                except OSError:
                    answer = b""
                if not answer and self.alive():
                    self.proc.kill()  # silent past the timeout: its children die with it (parent-death signal)
                reply = json.loads(answer) if answer else {}
                self.unanswered.popleft()._pid = int(reply["pid"]) if "pid" in reply else NO_PROCESS

    def close(self) -> None:
        """The server kills what it forked when its socket closes."""
        self.sock.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.home, ignore_errors=True)


_server: ForkServer | None = None
_server_pid = 0  # the process that started _server: a judge that forked starts its own
_broken = False
_retired: list = []  # servers given up on, with the pid that started each: closed when the judge exits
_server_lock = threading.Lock()


def server() -> ForkServer | None:
    """This judge's server, started on first use; None once it has failed (fresh processes from then on)."""
    global _server, _server_pid, _broken
    with _server_lock:
        if _broken:
            return None
        if _server is not None and (_server_pid != os.getpid() or not _server.alive()):
            _server = None
        if _server is None:
            try:
                _server, _server_pid = ForkServer(), os.getpid()
            except OSError as exc:
                _mark_broken(f"the fork server did not start: {exc}")
        return _server


def broken(message: str) -> None:
    """The server failed a request: from now on this judge starts trusted ranks fresh."""
    with _server_lock:
        _mark_broken(message)


def reset() -> None:
    """Close this judge's server and forget a failure: the next trusted rank starts a new one (tests)."""
    global _server, _broken
    with _server_lock:
        if _server is not None and _server_pid == os.getpid():
            _server.close()
        _server, _broken = None, False


def _mark_broken(message: str) -> None:
    global _server, _broken
    log.warning("%s; trusted ranks start as fresh processes from now on", message)
    _broken = True
    if _server is not None:
        # Kept, not closed: closing kills what it forked, and other judgements of this judge may be using those.
        _retired.append((_server, _server_pid))
        _server = None


@atexit.register
def _close_at_exit() -> None:
    for old, pid in _retired + [(_server, _server_pid)]:
        if old is not None and pid == os.getpid():
            old.close()


# --- the server's side ------------------------------------------------------------------------------------------------
def serve(ctl_fd: int, child_program: str) -> None:
    """Fork a rank for each request on ``ctl_fd`` until the judge closes it or is gone. ``child_program`` names the
    module whose ``become_rank`` each child runs (CHILD_PROGRAM): imported here, once, before any fork."""
    program = importlib.import_module(child_program)
    ctl = socket.socket(fileno=ctl_fd)
    parent = os.getppid()
    wake_r, wake_w = os.pipe()
    for fd in (wake_r, wake_w):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, int] = {}  # pid -> the write end of its status pipe
    watched: list[socket.socket | int] = [ctl, wake_r]
    try:
        while os.getppid() == parent:
            ready, _, _ = select.select(watched, [], [], PARENT_POLL_S)
            if wake_r in ready:
                while _drained(wake_r):
                    pass
            _reap(children)
            if ctl not in ready:
                continue
            message, fds, _flags, _addr = socket.recv_fds(ctl, MAX_MESSAGE, 5)
            if not message:
                break  # the judge closed its end
            pid = _fork(json.loads(message), fds, program)
            status_fd = fds[4]
            if pid is None:
                os.close(status_fd)
                ctl.send(json.dumps({"error": "fork failed"}).encode())
                continue
            children[pid] = status_fd
            ctl.send(json.dumps({"pid": pid}).encode())
    finally:
        for pid in children:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass


def _drained(fd: int) -> bool:
    try:
        return bool(os.read(fd, 512))
    except BlockingIOError:
        return False


def _reap(children: dict) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = children.pop(pid, None)
        if fd is not None:
            try:
                os.write(fd, str(os.waitstatus_to_exitcode(status)).encode())
            finally:
                os.close(fd)


def _fork(request: dict, fds: list, program: ModuleType) -> int | None:
    stdin, stdout, stderr, reply, _status = fds
    # The answer waits until the child leads its own session: the judge signals ranks by process group at once.
    in_session, session_ready = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        pid = None
    if pid == 0:
        code = 70
        try:
            os.close(in_session)
            code = program.become_rank(request, stdin, stdout, stderr, reply, os.getppid(), session_ready)
        finally:
            os._exit(code)
    os.close(session_ready)
    if pid is not None:
        os.read(in_session, 1)  # empty if the child died first: its status still comes through the reaping
    os.close(in_session)
    for fd in fds[:4]:
        os.close(fd)
    return pid


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2])
