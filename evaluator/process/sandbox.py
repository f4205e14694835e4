"""What a candidate's rank process may see and do: a private scratch directory, limits, isolation.

Every rank (reference and candidate) gets a scrubbed environment and dies with the judge
(evaluator/process/environment.py). Candidate ranks (untrusted code) are further confined by a :class:`Sandbox`, one
per candidate group, in three layers:

- **user**: a fresh numeric uid per job, no groups, no capabilities, ``no_new_privs``, so they cannot read the
  judge's or the reference's memory and environment (``/proc/PID/environ``, ``/proc/PID/mem``), 0600 files such as
  ``/etc/shadow``, signal other processes, or keep a process after the job (everything of the uid is killed);
- **network**: their own network and IPC namespaces, shared by the group's ranks, with only loopback up: no other
  host, no TCP port of the judge's own loopback (database, broker), no abstract Unix socket outside, and SysV IPC
  objects die with the namespace;
- **filesystem**: a bubblewrap mount namespace per rank (evaluator/process/bwrap.py) showing the system directories, the
  interpreter, ``evaluator/`` and ``problems/`` read-only, and the group's own scratch read-write, with a private
  /tmp and /dev/shm that are removed after the job. No /run, /var or home directories: no Unix socket of PostgreSQL,
  the broker or Docker, no site source or data.

Plus resource limits (no core dumps, bounded file size and process count, first in line for the OOM killer), and
SIGSTOP while the reference runs.

Fail closed: a sandbox that is ``required`` (every ranked profile; ``PKB_SANDBOX=required`` for a whole deployment)
and cannot set up all three layers raises :class:`SandboxUnavailable` before any candidate code runs; the judge turns
that into an ``infra_error`` naming what is missing. Otherwise (development) it runs with the layers the host allows,
and :attr:`Sandbox.complete` is False: the judge then flags the result ``unsandboxed`` (never ranked) and says so in
one line (:attr:`Sandbox.summary`). See docs/threat-model.md, section E.
"""
from __future__ import annotations

import ctypes
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import Iterable, Optional

from evaluator.process import bwrap, processes
from evaluator.process.environment import _LIBC, PKB_UTILS, PR_SET_PDEATHSIG, REPO_ROOT

FILE_SIZE_LIMIT = 2 * 2**30  # one file a candidate writes (logs included)
PROCESS_LIMIT = 8192  # processes and threads of one candidate group (its own uid), i.e. no fork bomb
UID_RANGE = processes.UID_RANGE

CLONE_NEWNET = 0x40000000
CLONE_NEWIPC = 0x08000000
PR_SET_NO_NEW_PRIVS = 38
# A tiny program (no site, no torch) that enters new network and IPC namespaces, brings loopback up and waits; the
# judge keeps handles on both namespaces and every candidate rank joins them.
_NAMESPACE_HOLDER = r"""
import ctypes, fcntl, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x40000000 | 0x08000000) != 0:
    print("unshare(CLONE_NEWNET | CLONE_NEWIPC) failed: errno %d" % ctypes.get_errno(), flush=True)
    sys.exit(1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH22x", fcntl.ioctl(s, 0x8913, struct.pack("16sH22x", b"lo", 0)))[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags | 0x1 | 0x40))
print("ok", flush=True)
sys.stdin.read()
"""

# Checks, as the candidate user, that everything a rank needs is readable (interpreter, stdlib, torch, this repo):
# the uid layer without the filesystem view, which then reaches these through the host's own directories.
_ACCESS_PROBE = ("import os, sys\n"
                 "def ok(p):\n"
                 "    return os.access(p[3:], os.R_OK | os.W_OK) if p.startswith('rw:') else os.access(p, os.R_OK)\n"
                 "print('\\n'.join(p for p in sys.argv[1:] if not ok(p)))")
_probe_cache: dict = {}


class SandboxUnavailable(RuntimeError):
    """A required sandbox cannot be set up on this host: no candidate code may run (an ``infra_error``)."""


def mode() -> str:
    """``PKB_SANDBOX`` in the judge's environment: ``required`` (fail closed), ``auto`` (the default: every layer the
    host allows, results flagged when one is missing) or ``off`` (``0``; debugging only, never for ranked work)."""
    value = os.environ.get("PKB_SANDBOX", "auto").strip().lower()
    if value in ("0", "off", "false", "no"):
        return "off"
    if value in ("required", "require", "strict"):
        return "required"
    return "auto"


def enabled_by_default() -> bool:
    return mode() != "off"


def required_by_default() -> bool:
    return mode() == "required"


def host_support() -> dict:
    """What a sandbox on this host would be, without starting a job: ``complete`` and one line per layer. For the
    worker's start-up check and the site's banner."""
    box = Sandbox(enabled=True, required=False)
    try:
        return {"complete": box.complete, "summary": box.summary, "missing": list(box.missing),
                **{k: box.notes[k] for k in ("user", "network", "filesystem")}}
    finally:
        box.close()


# --- the candidate group's sandbox ------------------------------------------------------------------------------------

class Sandbox:
    """Isolation for one candidate group (all its ranks); see the module docstring. ``enabled=False`` keeps only the
    scrubbed environment and the rlimits (for debugging, and to test what the other layers defend against)."""

    def __init__(self, enabled: bool = True, required: bool = False):
        self.enabled = enabled
        self.required = required
        self.uid: Optional[int] = None
        self.netns_fd: Optional[int] = None
        self.ipcns_fd: Optional[int] = None
        self.filesystem = False  # ranks start inside a bwrap view (evaluator/process/bwrap.py)
        self.scratch_root: Optional[str] = None  # set by the group: its directory, in each rank's PKB_SCRATCH
        self.shared_tmp: Optional[str] = None
        self.shared_shm: Optional[str] = None
        self.paused = False
        self.closed = False
        self.missing: list[str] = []
        self._stopped: set[int] = set()
        self.notes: dict = {"enabled": enabled, "required": required,
                            "limits": {"file_size_bytes": FILE_SIZE_LIMIT, "core": 0, "processes": PROCESS_LIMIT,
                                       "oom_score_adj": 1000}}
        if not enabled:
            self.notes.update(user="judge's own (sandbox switched off)", network="host (sandbox switched off)",
                              filesystem="host (sandbox switched off)")
            self.missing.append("the sandbox is switched off (PKB_SANDBOX=off)")
        else:
            self._set_up_user()
            self._set_up_network()
        self.notes["complete"] = self.complete
        self.notes["summary"] = self.summary
        if self.required and not self.complete:
            self.close()
            raise SandboxUnavailable("this profile runs candidates only inside the sandbox, and this host cannot "
                                     "give one: " + "; ".join(self.missing))

    @property
    def complete(self) -> bool:
        return self.enabled and not self.missing

    @property
    def summary(self) -> str:
        """One line for people: what confined the candidate, or that nothing did."""
        if self.complete:
            return (f"sandboxed: own uid {self.uid}, no network (loopback only), private filesystem view, "
                    "no process outlives the job")
        return "UNSANDBOXED (do not run code you do not trust this way): " + "; ".join(self.missing)

    # --- set-up ---------------------------------------------------------------------------------------------------
    def _set_up_user(self) -> None:
        if os.geteuid() != 0:
            self.notes["user"] = f"judge's own uid {os.geteuid()} (the judge is not root, so it cannot switch users)"
            self.notes["filesystem"] = "host (a mount namespace needs a root judge)"
            self.missing.append("the judge is not root, so candidates cannot get their own uid or filesystem view")
            return
        view = _probe_filesystem_view()
        if view is None:
            self.filesystem = True
            self.notes["filesystem"] = "private view (bwrap): system, interpreter, evaluator/ and problems/ " \
                                       "read-only; own scratch, /tmp and /dev/shm"
        else:
            self.notes["filesystem"] = f"host ({view})"
            self.missing.append(f"no private filesystem view: {view}")
            problem = _probe_user_access()
            if problem:
                self.notes["user"] = f"judge's own (root): {problem}"
                self.missing.append(f"no separate uid: {problem}")
                return
        self.uid = processes.free_uid()
        self.notes["user"] = f"uid {self.uid}, no groups, no capabilities, no_new_privs (separate from the judge)"

    def _set_up_network(self) -> None:
        if os.geteuid() != 0:
            self.notes["network"] = "host (the judge is not root, so it cannot create a network namespace)"
            self.missing.append("no network namespace (the judge is not root)")
            return
        try:
            holder = subprocess.Popen([sys.executable, "-S", "-c", _NAMESPACE_HOLDER], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={"PATH": "/usr/bin:/bin"})
        except OSError as exc:
            self.notes["network"] = f"host (cannot start the namespace holder: {exc})"
            self.missing.append(f"no network namespace: {exc}")
            return
        try:
            line = holder.stdout.readline().decode(errors="replace").strip()
            if line == "ok":
                self.netns_fd = os.open(f"/proc/{holder.pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
                self.ipcns_fd = os.open(f"/proc/{holder.pid}/ns/ipc", os.O_RDONLY | os.O_CLOEXEC)
                self.notes["network"] = "own namespace, loopback only; own IPC namespace"
            else:
                self.notes["network"] = f"host (no network namespace: {line or 'holder exited'})"
                self.missing.append(f"no network namespace: {line or 'holder exited'}")
        finally:
            try:
                holder.stdin.close()
            except OSError:
                pass
            try:
                holder.wait(10)
            except subprocess.TimeoutExpired:
                holder.kill()
                holder.wait()

    @property
    def user_name(self) -> Optional[str]:
        return f"pkb-sandbox-{self.uid}" if self.uid is not None else None

    @property
    def loopback_only(self) -> bool:
        return self.netns_fd is not None

    def own(self, path: str, mode: int = 0o700) -> None:
        """Give a directory tree (created by the judge) to the candidate's uid."""
        if self.uid is None:
            return
        for root, dirs, files in os.walk(path):
            for name in [root] + [os.path.join(root, d) for d in dirs] + [os.path.join(root, f) for f in files]:
                os.lchown(name, self.uid, self.uid)
        os.chmod(path, mode)

    def prepare(self, workdir: str) -> None:
        """The group's shared /tmp (in its directory) and /dev/shm (in the host's, so it stays in memory), both the
        candidate's, both removed by cleanup()."""
        self.scratch_root = os.path.abspath(workdir)
        if not self.filesystem:
            return
        self.shared_tmp = os.path.join(workdir, "tmp")
        os.makedirs(self.shared_tmp, exist_ok=True)
        self.own(self.shared_tmp)
        shm_root = "/dev/shm" if os.path.isdir("/dev/shm") else workdir
        self.shared_shm = tempfile.mkdtemp(prefix="pkb-shm-", dir=shm_root)
        self.own(self.shared_shm)

    def command(self, argv: list[str], rank_dir: str, writable: Iterable[str], readable: Iterable[str]) -> list[str]:
        """``argv`` as a rank of this group starts it: inside the filesystem view when there is one."""
        if not self.filesystem:
            return argv
        return bwrap.command(argv, self.uid, rank_dir, writable, readable, self.shared_tmp, self.shared_shm)

    def preexec(self):
        """The function that runs in each candidate rank between fork and exec (as root, before dropping it)."""
        uid, netns_fd, ipcns_fd, enabled = self.uid, self.netns_fd, self.ipcns_fd, self.enabled
        drop_here = uid is not None and not self.filesystem  # with a view, setpriv drops inside it

        def confine() -> None:
            if netns_fd is not None and _LIBC.setns(netns_fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns(CLONE_NEWNET) failed")
            if ipcns_fd is not None and _LIBC.setns(ipcns_fd, CLONE_NEWIPC) != 0:
                raise OSError(ctypes.get_errno(), "setns(CLONE_NEWIPC) failed")
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
            if enabled:
                resource.setrlimit(resource.RLIMIT_NPROC, (PROCESS_LIMIT, PROCESS_LIMIT))
                try:
                    with open("/proc/self/oom_score_adj", "w") as f:
                        f.write("1000")
                except OSError:
                    pass
            if drop_here:
                _LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
            _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # after setuid, which clears it

        return confine

    # --- control ----------------------------------------------------------------------------------------------------
    def pause(self, pgids: Iterable[int]) -> None:
        """Stop every process of the group (SIGSTOP cannot be caught): while the reference runs, nothing runs here."""
        if not self.enabled or self.closed:
            return
        self.paused = True
        self._stopped = set()
        for pgid in pgids:
            processes.signal_group(pgid, signal.SIGSTOP)
        # Processes in other sessions (daemons) too: all of the uid's, or without one, those carrying the group's
        # scratch path in their environment. A stopped process cannot fork, so a few sweeps find them all.
        if self.uid is not None or self.scratch_root:
            for _ in range(3):
                found = (processes.processes_of(self.uid) if self.uid is not None
                         else processes.processes_with_scratch(self.scratch_root))
                fresh = [pid for pid in found if pid not in self._stopped and pid != os.getpid()]
                if not fresh:
                    break
                for pid in fresh:
                    processes.signal_pid(pid, signal.SIGSTOP)
                self._stopped.update(fresh)

    def resume(self, pgids: Iterable[int]) -> None:
        if not self.paused:
            return
        self.paused = False
        for pgid in pgids:
            processes.signal_group(pgid, signal.SIGCONT)
        for pid in self._stopped:
            processes.signal_pid(pid, signal.SIGCONT)

    def cleanup(self) -> dict:
        """Kill every process of the candidate's uid (daemons included), and every process that still carries this
        group's scratch path in its environment (the fallback without a separate uid), then remove its files in
        shared places and its private /dev/shm."""
        if self.closed:
            return {"killed_outliving": 0, "removed_files": 0}
        self.closed = True
        report = processes.reap(self.uid, self.scratch_root)
        if self.shared_shm and os.path.isdir(self.shared_shm):
            shutil.rmtree(self.shared_shm, ignore_errors=True)
        return report

    def close(self) -> None:
        self.cleanup()
        self.closed = True
        for attr in ("netns_fd", "ipcns_fd"):
            fd = getattr(self, attr)
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
                setattr(self, attr, None)


def _probe_filesystem_view() -> Optional[str]:
    """None if candidate ranks can start inside a bwrap view on this host; else the reason (cached per process)."""
    if "view" not in _probe_cache:
        scratch = tempfile.mkdtemp(prefix="pkb-view-probe-")
        uid = UID_RANGE[1]  # outside the jobs' range: reaping it after the probe can never touch a job
        try:
            _probe_cache["view"] = bwrap.works(uid, scratch)
        finally:
            processes.reap(uid, None)
            shutil.rmtree(scratch, ignore_errors=True)
    return _probe_cache["view"]


def _probe_user_access() -> Optional[str]:
    """None if an unprivileged uid can run the rank worker with this interpreter; else the reason (cached)."""
    if "result" in _probe_cache:
        return _probe_cache["result"]
    import torch  # noqa: F401 - its location is what must be readable

    paths = [os.path.realpath(sys.executable), os.path.dirname(os.__file__), os.path.dirname(torch.__file__),
             os.path.join(REPO_ROOT, "evaluator", "rank", "worker.py"),
             os.path.join(REPO_ROOT, "problems", "__init__.py"), PKB_UTILS]
    # GPU device nodes (present on GPU hosts only): the candidate's uid must be able to open them.
    paths += ["rw:" + os.path.join("/dev", name) for name in ("nvidiactl", "nvidia-uvm", "nvidia0")
              if os.path.exists(os.path.join("/dev", name))]
    try:
        out = subprocess.run([sys.executable, "-S", "-c", _ACCESS_PROBE, *paths],
                             preexec_fn=processes.as_user(UID_RANGE[0]), env={}, capture_output=True, text=True,
                             timeout=60)
        unreadable = [p for p in out.stdout.split("\n") if p]
        if out.returncode != 0:
            result = f"an unprivileged user cannot run {sys.executable} (status {out.returncode})"
        elif unreadable:
            result = f"not readable by an unprivileged user: {', '.join(unreadable)}"
        else:
            result = None
    except (OSError, subprocess.SubprocessError) as exc:
        result = f"an unprivileged user cannot run {sys.executable}: {exc}"
    _probe_cache["result"] = result
    return result
