"""What a candidate's rank processes may see and do: one box per candidate group, enforced by the kernel.

Every rank (reference and candidate) gets a scrubbed environment and dies with the judge
(evaluator/process/environment.py). A candidate group (untrusted code, all its W ranks) is further confined by a
:class:`Sandbox`, one box each, in these layers:

- **box id** (evaluator/process/boxes.py): taken under a lock file from a fixed range; it gives the uid, the control
  group's name and the box's directory, so judges starting together never share any of them;
- **user**: the box's uid, no groups, no capabilities, ``no_new_privs``: no other process's memory or environment, no
  0600 file, no signal to anything outside the box;
- **control group** (evaluator/process/cgroups.py, v2 or v1): every process of the box whatever its session, a memory
  limit that counts shared memory and tmpfs pages (the kernel kills inside the box alone when it is reached), a
  process limit, the freezer that stops the whole box at once while the reference runs, and one kill at the end;
- **namespaces** (evaluator/process/box_init.py): network (loopback only), IPC (System V shared memory bounded, gone
  with the box) and pid (the ranks see one another and nothing else; the box's own init reaps every orphan);
- **filesystem**: a bubblewrap mount namespace per rank (evaluator/process/bwrap.py) showing the system directories,
  a whitelist of /etc, the interpreter, ``evaluator/`` and ``problems/`` read-only, the group's scratch read-write,
  and the box's bounded tmpfs as /tmp and /dev/shm. No /run, /var or home directories: no Unix socket of PostgreSQL,
  the broker or Docker, no site source or data.

Plus resource limits (no core dumps, bounded file size, first in line for the OOM killer). How a rank enters its box
(the view's command line, what runs between fork and exec): evaluator/process/box_entry.py; pausing, resuming and
ending a box once it is set up: evaluator/process/box_control.py; how big it may grow: evaluator/process/limits.py.

Fail closed: a sandbox that is ``required`` (every site job; ``PKB_SANDBOX=required``; ``pkb eval --require-sandbox``)
and cannot set up every layer raises :class:`SandboxUnavailable` before any candidate code runs; the judge turns that
into an ``infra_error`` naming what is missing. Only ``pkb eval`` on one's own machine (``PKB_SANDBOX=auto``, the
CLI's default) runs with the layers the host allows; :attr:`Sandbox.complete` is then False and the judge flags the
result ``unsandboxed`` (never ranked), saying so in one line (:attr:`Sandbox.summary`). See docs/threat-model.md,
section E.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import IO, cast

from evaluator.contract.schema import sandbox_mode
from evaluator.process import boxes, cgroups, devices, limits, probes, processes, seccomp
from evaluator.process.box_control import BoxControl
from evaluator.process.box_entry import BoxEntry
from evaluator.process.environment import _LIBC, PR_SET_PDEATHSIG
from evaluator.process.limits import FILE_SIZE_LIMIT, PROCESS_LIMIT, RANK_MEMORY, TMPFS_MAX, memory_limit  # noqa: F401

UID_RANGE = processes.UID_RANGE
BOX_INIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "box_init.py")

# What the probes found (evaluator/process/probes.py), once per process; tests replace it to simulate a host.
_probe_cache: dict = {}


class SandboxUnavailable(RuntimeError):
    """A required sandbox cannot be set up on this host: no candidate code may run (an ``infra_error``)."""


def mode() -> str:
    """``PKB_SANDBOX`` in the judge's environment: ``required`` (fail closed), ``auto`` (the default of ``pkb eval``
    on one's own machine: every layer the host allows, results flagged when one is missing) or ``off`` (``0``: an
    operator's explicit choice, logged, every result flagged)."""
    return sandbox_mode(os.environ.get("PKB_SANDBOX"), default="auto")


def enabled_by_default() -> bool:
    return mode() != "off"


def required_by_default() -> bool:
    return mode() == "required"


def host_support() -> dict:
    """What a sandbox on this host would be, without starting a job: ``complete`` and one line per layer. For the
    worker's start-up check and the site's banner."""
    box = Sandbox(enabled=True, required=False)
    try:
        return {
            "complete": box.complete,
            "summary": box.summary,
            "missing": list(box.missing),
            **{k: box.notes[k] for k in ("user", "network", "filesystem", "box")},
        }
    finally:
        box.close()


# --- the candidate group's sandbox ------------------------------------------------------------------------------------


class Sandbox(BoxEntry, BoxControl):
    """One box for one candidate group (all its ranks); see the module docstring. ``enabled=False`` keeps only the
    scrubbed environment and the rlimits (for debugging, and to test what the other layers defend against)."""

    def __init__(
        self, enabled: bool = True, required: bool = False, world_size: int = 1, memory_bytes: int | None = None
    ):
        self.enabled = enabled
        self.required = required
        self.uid: int | None = None
        self.box: boxes.Box | None = None
        self.cgroup: cgroups.BoxCgroup | None = None
        self.holder: subprocess.Popen | None = None  # the box's init's parent (evaluator/process/box_init.py)
        self.init_pid: int | None = None
        self.netns_fd: int | None = None
        self.ipcns_fd: int | None = None
        self.pidns_fd: int | None = None
        self.filesystem = False  # ranks start inside a bwrap view (evaluator/process/bwrap.py)
        self.scratch_root: str | None = None  # set by the group: its directory, in each rank's PKB_SCRATCH
        self.shared_tmp: str | None = None
        self.shared_shm: str | None = None
        self.etc_dir: str | None = None  # the box's passwd and group
        self.paused = False
        self.closed = False
        self.missing: list[str] = []
        self.pause_s: list[float] = []  # how long each pause took (docs/threat-model.md, the box's cost)
        self._stopped: set[int] = set()
        self.failures: list[str] = []  # what clean-up could not do (close() quarantines the box and says so)
        self.file_size_bytes = FILE_SIZE_LIMIT  # one file a rank writes: its RLIMIT_FSIZE (box_entry.py) and notes
        self.memory_bytes = memory_bytes or memory_limit(world_size)
        self.tmpfs_bytes = limits.tmpfs_bytes(self.memory_bytes)
        self.scratch_bytes, self.scratch_files = limits.scratch_bytes(self.memory_bytes), limits.scratch_files()
        self.pids_max, self.cpus = limits.box_pids(), limits.box_cpus()
        self.devices, self.device_env, device_note = devices.for_this_judge()
        self._seccomp_fd: int | None = None  # the current rank's copy of the filter (evaluator/process/seccomp.py)
        self.notes: dict = {
            "enabled": enabled,
            "required": required,
            "box": None,
            "devices": device_note,
            "limits": {
                "file_size_bytes": self.file_size_bytes,
                "core": 0,
                "processes": self.pids_max,
                "oom_score_adj": 1000,
                "memory_bytes": self.memory_bytes,
                "tmpfs_bytes": self.tmpfs_bytes,
                "scratch_bytes": self.scratch_bytes,
                "scratch_files": self.scratch_files,
                "cpus": limits.cpu_list(self.cpus),
            },
        }
        if not enabled:
            self.notes.update(
                user="judge's own (sandbox switched off)",
                network="host (sandbox switched off)",
                filesystem="host (sandbox switched off)",
            )
            self.missing.append("the sandbox is switched off (PKB_SANDBOX=off)")
        else:
            try:
                self._set_up()
            except BaseException:
                self.close()
                raise
        self.notes["complete"] = self.complete
        self.notes["summary"] = self.summary
        if self.required and not self.complete:
            self.close()
            raise SandboxUnavailable(
                "this job runs candidates only inside the whole sandbox, and this host cannot "
                "give one: " + "; ".join(self.missing)
            )

    @property
    def complete(self) -> bool:
        return self.enabled and not self.missing

    @property
    def summary(self) -> str:
        """One line for people: what confined the candidate, or that nothing did."""
        if self.complete and self.box is not None:  # a complete sandbox took a box
            return (
                f"sandboxed: box {self.box.id} (uid {self.uid}), own control group (memory "
                f"{self.memory_bytes / 2**30:.1f} GB), own pid, network and IPC namespaces (loopback only), "
                "private filesystem view, no process outlives the job"
            )
        return "UNSANDBOXED (do not run code you do not trust this way): " + "; ".join(self.missing)

    # --- set-up ---------------------------------------------------------------------------------------------------
    def _set_up(self) -> None:
        if os.geteuid() != 0:
            self.notes["user"] = f"judge's own uid {os.geteuid()} (the judge is not root, so it cannot switch users)"
            self.notes["filesystem"] = "host (a mount namespace needs a root judge)"
            self.notes["network"] = "host (the judge is not root, so it cannot create a network namespace)"
            self.missing.append(
                "the judge is not root, so candidates cannot get a box (own uid, control group, "
                "namespaces, filesystem view)"
            )
            return
        try:
            self.box = boxes.acquire()
        except (boxes.BoxesExhausted, OSError) as exc:
            self.notes.update(user="none (no box id)", network="host (no box)", filesystem="host (no box)")
            self.missing.append(f"no box id: {exc}")
            return
        self.uid = self.box.uid
        self.etc_dir = self.box.etc
        self._set_up_cgroup(self.box)
        self._set_up_tmpfs(self.box)
        self._set_up_user(self.box)
        self._set_up_namespaces(self.box)
        if seccomp.program() is None:
            self.missing.append("no seccomp filter for this machine's architecture (user namespaces inside the box)")
        self.notes["box"] = {
            "id": self.box.id,
            "uid": self.uid,
            "dir": self.box.dir,
            "cgroup": (f"{self.cgroup.where.describe()}, {self.cgroup.name}" if self.cgroup else None),
        }

    def _set_up_cgroup(self, box: boxes.Box) -> None:
        try:
            self.cgroup = cgroups.BoxCgroup(box.name, self.memory_bytes, self.pids_max, cpus=self.cpus)
            cores = (
                f"cores {limits.cpu_list(self.cpus)} (cpuset)"
                if self.cgroup.where.cpuset
                else f"cores {limits.cpu_list(self.cpus)} (affinity only: no cpuset controller)"
            )
            self.notes["cgroup"] = (
                f"{self.cgroup.where.describe()}: memory {self.memory_bytes} bytes (shared "
                f"memory and tmpfs included), {self.pids_max} processes, {cores}, freezer"
            )
        except cgroups.CgroupUnavailable as exc:
            self.notes["cgroup"] = f"none ({exc})"
            self.missing.append(f"no control group for the box: {exc}")

    def _set_up_tmpfs(self, box: boxes.Box) -> None:
        try:
            box.mount_fs(self.tmpfs_bytes)
        except OSError as exc:
            self.missing.append(f"no bounded tmpfs for the box's /tmp and /dev/shm: {exc}")

    def _set_up_user(self, box: boxes.Box) -> None:
        view = probes.filesystem_view(_probe_cache)
        if view is None and box.mounted:
            self.filesystem = True
            self.notes["filesystem"] = (
                "private view (bwrap): system, a whitelist of /etc, interpreter, evaluator/ "
                "and problems/ read-only; own scratch; the box's tmpfs as /tmp and /dev/shm"
            )
        else:
            reason = view or "the box has no tmpfs for /tmp and /dev/shm"
            self.notes["filesystem"] = f"host ({reason})"
            self.missing.append(f"no private filesystem view: {reason}")
            problem = probes.user_access(_probe_cache, box.uid)
            if problem:
                self.notes["user"] = f"judge's own (root): {problem}"
                self.missing.append(f"no separate uid: {problem}")
                self.uid = None
                return
        self.notes["user"] = f"uid {self.uid}, no groups, no capabilities, no_new_privs (separate from the judge)"

    def _set_up_namespaces(self, box: boxes.Box) -> None:
        """The box's init (evaluator/process/box_init.py), started inside the box's control group: it makes the
        network, IPC and pid namespaces that every rank joins and reaps what the candidate orphans."""
        join = self.cgroup.joiner() if self.cgroup else None

        def preexec() -> None:
            if join is not None:
                join()
            _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            try:
                with open("/proc/self/oom_score_adj", "w") as f:
                    f.write("-1000")  # the box's memory limit kills a rank, never its init
            except OSError:
                pass

        try:
            self.holder = subprocess.Popen(
                [sys.executable, "-S", BOX_INIT, box.empty, str(self.tmpfs_bytes)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env={"PATH": "/usr/bin:/bin"},
                preexec_fn=preexec,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            self.notes["network"] = f"host (cannot start the box's init: {exc})"
            self.missing.append(f"no namespaces for the box: {exc}")
            return
        line = cast(IO[bytes], self.holder.stdout).readline().decode(errors="replace").strip()
        if not line.startswith("ok "):
            self.notes["network"] = f"host (no namespaces: {line or 'the box init exited'})"
            self.missing.append(f"no namespaces for the box: {line or 'the box init exited'}")
            self._stop_holder()
            return
        self.init_pid = int(line.split()[1])
        try:
            self.netns_fd = os.open(f"/proc/{self.init_pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            self.ipcns_fd = os.open(f"/proc/{self.init_pid}/ns/ipc", os.O_RDONLY | os.O_CLOEXEC)
            self.pidns_fd = os.open(f"/proc/{self.init_pid}/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            self.notes["network"] = f"host (cannot open the box's namespaces: {exc})"
            self.missing.append(f"no namespaces for the box: {exc}")
            return
        self.notes["network"] = "own namespace, loopback only; own IPC namespace (System V shared memory bounded)"
        self.notes["pid"] = "own pid namespace with the box's init as pid 1 (it reaps every orphan)"

    @property
    def user_name(self) -> str | None:
        return self.box.user_name if self.box is not None and self.uid is not None else None

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
        """The group's shared /tmp and /dev/shm: the box's tmpfs; its scratch (``workdir``: rank directories, outputs,
        builds): a tmpfs of its own bounded in bytes and files, the judge's logs kept on disk below it. Both are
        charged to the box's memory limit and unmounted with the box."""
        self.scratch_root = os.path.abspath(workdir)
        if not self.filesystem or self.box is None:  # a filesystem view is made only in a box
            return
        self.shared_tmp = os.path.join(self.box.fs, "tmp")
        self.shared_shm = os.path.join(self.box.fs, "shm")
        try:
            self.box.mount_scratch(self.scratch_root, self.scratch_bytes, self.scratch_files, keep=("logs",))
        except OSError as exc:
            self.missing.append(f"no bounded scratch for the group: {exc}")
            self.notes.update(complete=self.complete, summary=self.summary)
            if self.required:
                raise SandboxUnavailable("this job runs candidates only inside the whole sandbox: " + str(exc)) from exc
