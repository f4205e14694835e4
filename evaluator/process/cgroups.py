"""A control group per sandbox box, on cgroup v2 or on the v1 hierarchies (memory, pids, freezer), whichever the host
mounts: every process a candidate starts lands in it whatever its session, the kernel bounds its memory (shared
memory and tmpfs pages included, since they are charged to the group that touched them) and its process count, freezes
and thaws it as one, and kills it as one.

Where the boxes live: under ``PKB_CGROUP_PARENT`` (a path inside the hierarchy, for an operator who delegates one, e.g.
a systemd slice with ``Delegate=yes``); otherwise ``pkb-arena/`` below the judge's own group on v1 (so a limit the
host puts on the judge holds for its boxes too), and at the top of the v2 hierarchy, since v2 forbids controllers in a
group that holds processes (the judge's own). See docs/threat-model.md, section 6.
"""
from __future__ import annotations

import os
import signal
import time
from typing import Optional

from evaluator.process import limits
from evaluator.process.protocol import CandidateFault

V1_CONTROLLERS = ("memory", "pids", "freezer")
V1_OPTIONAL = ("cpuset",)  # the box's cores: used where the host mounts it (docs/threat-model.md, the box's limits)
V2_CONTROLLERS = ("memory", "pids")
V2_OPTIONAL = ("cpuset",)
PARENT_NAME = "pkb-arena"
FREEZE_TIMEOUT_S = 10.0
KILL_TIMEOUT_S = 20.0  # a torch-sized process tree at the pids limit dies in seconds; past this the box is quarantined


class CgroupUnavailable(RuntimeError):
    """This host cannot give a box its own control group; the message names what is missing."""


def _mounts() -> list[tuple[str, str, list[str]]]:
    """(mount point, fstype, options) of every cgroup file system the judge sees."""
    found = []
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 4 and parts[2] in ("cgroup", "cgroup2"):
                    found.append((parts[1].replace("\\040", " "), parts[2], parts[3].split(",")))
    except OSError:
        pass
    return found


def _own_path(controller: Optional[str]) -> str:
    """The judge's own group in one hierarchy (``None``: the v2 one), from /proc/self/cgroup."""
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, names, path = line.rstrip("\n").split(":", 2)
                if (controller is None and names == "") or (controller and controller in names.split(",")):
                    return path
    except OSError:
        pass
    return "/"


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _mkdir(path: str) -> None:
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass


class Layout:
    """Where this host's boxes go: ``version`` 2 with one parent directory, or 1 with one per controller."""

    def __init__(self, version: int, parents: dict[str, str], cpuset: bool = False):
        self.version, self.parents = version, parents
        self.cpuset = cpuset if version == 2 else "cpuset" in parents

    def describe(self) -> str:
        if self.version == 2:
            return f"cgroup v2 ({self.parents['unified']})"
        return "cgroup v1 (" + ", ".join(f"{c} {p}" for c, p in sorted(self.parents.items())) + ")"


_layout_cache: dict = {}


def layout() -> Layout:
    """The host's layout, found once per process (raises CgroupUnavailable with the reason)."""
    if "layout" not in _layout_cache:
        try:
            _layout_cache["layout"] = _find_layout()
        except CgroupUnavailable as exc:
            _layout_cache["layout"] = exc
    found = _layout_cache["layout"]
    if isinstance(found, CgroupUnavailable):
        raise found
    return found


def _find_layout() -> Layout:
    if os.geteuid() != 0:
        raise CgroupUnavailable("the judge is not root, so it cannot create control groups")
    mounts = _mounts()
    configured = os.environ.get("PKB_CGROUP_PARENT", "").strip().strip("/")
    v2 = [m for m in mounts if m[1] == "cgroup2"]
    for point, _, _ in v2:
        try:
            available = _read(os.path.join(point, "cgroup.controllers")).split()
        except OSError:
            continue
        if not all(c in available for c in V2_CONTROLLERS):
            continue  # the empty v2 hierarchy of a hybrid host: its controllers are bound to v1
        parent = os.path.join(point, configured or PARENT_NAME)
        wanted = V2_CONTROLLERS + tuple(c for c in V2_OPTIONAL if c in available)
        try:
            _enable_v2(os.path.dirname(parent), wanted)
            _mkdir(parent)
            _enable_v2(parent, wanted)
            _limit_parent_pids(parent)
            if not os.path.exists(os.path.join(parent, "cgroup.freeze")):
                raise CgroupUnavailable(f"{parent} has no cgroup.freeze (the v2 freezer needs Linux 5.2)")
        except OSError as exc:
            raise CgroupUnavailable(f"cannot set up the boxes' cgroup v2 parent {parent}: {exc}") from exc
        return Layout(2, {"unified": parent}, cpuset="cpuset" in wanted)
    v1 = {}
    for controller in V1_CONTROLLERS:
        point = next((m[0] for m in mounts if m[1] == "cgroup" and controller in m[2]), None)
        if point is None:
            raise CgroupUnavailable(f"no cgroup v2 hierarchy with {', '.join(V2_CONTROLLERS)} and no cgroup v1 "
                                    f"{controller} hierarchy is mounted")
        base = configured or os.path.join(_own_path(controller).strip("/"), PARENT_NAME)
        parent = os.path.join(point, base)
        try:
            os.makedirs(parent, mode=0o755, exist_ok=True)
        except OSError as exc:
            raise CgroupUnavailable(f"cannot create the boxes' cgroup v1 {controller} parent {parent}: {exc}") from exc
        v1[controller] = parent
    _limit_parent_pids(v1["pids"])
    for controller in V1_OPTIONAL:
        point = next((m[0] for m in mounts if m[1] == "cgroup" and controller in m[2]), None)
        if point is None:
            continue
        parent = os.path.join(point, configured or os.path.join(_own_path(controller).strip("/"), PARENT_NAME))
        try:
            _v1_cpuset_parent(parent)
        except OSError:
            continue  # the cores stay the judge's affinity alone; sandbox notes say the cpuset is missing
        v1[controller] = parent
    return Layout(1, v1)


def _v1_cpuset_parent(parent: str) -> None:
    """A v1 cpuset group starts with no cores and no memory nodes: each level down to the boxes' parent copies its
    parent's, or no task could join."""
    missing = []
    path = parent
    while not os.path.exists(os.path.join(path, "cpuset.cpus")) or not _read(
            os.path.join(path, "cpuset.cpus")).strip():
        missing.append(path)
        path = os.path.dirname(path)
    for directory in reversed(missing):
        _mkdir(directory)
        above = os.path.dirname(directory)
        for name in ("cpuset.cpus", "cpuset.mems"):
            _write(os.path.join(directory, name), _read(os.path.join(above, name)).strip())


def _limit_parent_pids(parent: str) -> None:
    """All boxes together hold at most a share of the host's pids (evaluator/process/limits.py), whatever their
    number: concurrent boxes at their own limits cannot exhaust pid_max."""
    try:
        _write(os.path.join(parent, "pids.max"), str(limits.all_boxes_pids()))
    except OSError:
        pass  # a delegated parent whose limit the operator set


def _enable_v2(directory: str, wanted: tuple = V2_CONTROLLERS) -> None:
    """Make ``wanted`` controllers available to ``directory``'s children (v2 hands controllers down level by
    level)."""
    enabled = _read(os.path.join(directory, "cgroup.subtree_control")).split()
    missing = [c for c in wanted if c not in enabled]
    if missing:
        _write(os.path.join(directory, "cgroup.subtree_control"), " ".join("+" + c for c in missing))


class BoxCgroup:
    """One box's control group (in each v1 hierarchy, or the one v2 group)."""

    def __init__(self, name: str, memory_bytes: int, pids_max: int, where: Optional[Layout] = None,
                 create: bool = True, cpus: Optional[list[int]] = None):
        self.where = where or layout()
        self.name, self.memory_bytes, self.pids_max = name, memory_bytes, pids_max
        self.cpus = cpus if cpus is not None else limits.box_cpus()
        self.left: list[int] = []  # processes a kill could not end within its bound (the box is then quarantined)
        self.dirs = {c: os.path.join(p, name) for c, p in self.where.parents.items()}
        self.remove()  # a box id's leftover from a judge that died: its processes are killed first
        if not create:
            return
        try:
            for path in self.dirs.values():
                os.mkdir(path, 0o755)
            self._limit()
        except OSError as exc:
            self.remove()
            raise CgroupUnavailable(f"cannot create the box's control group {name}: {exc}") from exc

    @property
    def v2(self) -> bool:
        return self.where.version == 2

    def _file(self, controller: str, name: str) -> str:
        return os.path.join(self.dirs["unified" if self.v2 else controller], name)

    def _limit(self) -> None:
        if self.v2:
            _write(self._file("memory", "memory.max"), str(self.memory_bytes))
            for name, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
                if os.path.exists(self._file("memory", name)):
                    _write(self._file("memory", name), value)
            _write(self._file("pids", "pids.max"), str(self.pids_max))
            if self.where.cpuset:
                _write(self._file("cpuset", "cpuset.cpus"), limits.cpu_list(self.cpus))
            return
        if self.where.cpuset:  # v1: cores and memory nodes both, or no task may join
            _write(self._file("cpuset", "cpuset.cpus"), limits.cpu_list(self.cpus))
            _write(self._file("cpuset", "cpuset.mems"), _read(os.path.join(self.where.parents["cpuset"],
                                                                            "cpuset.mems")).strip())
        _write(self._file("memory", "memory.limit_in_bytes"), str(self.memory_bytes))
        memsw = self._file("memory", "memory.memsw.limit_in_bytes")
        if os.path.exists(memsw):  # no swap beyond the limit either, where the host accounts swap
            try:
                _write(memsw, str(self.memory_bytes))
            except OSError:
                pass
        _write(self._file("pids", "pids.max"), str(self.pids_max))

    # --- joining: called between fork and exec, so plain writes of the caller's own pid ------------------------------
    def procs_files(self) -> list[str]:
        return [os.path.join(d, "cgroup.procs") for d in self.dirs.values()]

    def joiner(self):
        """A function for between fork and exec: moves the calling process into the box (its children follow)."""
        files = self.procs_files()

        def join() -> None:
            pid = str(os.getpid())
            for path in files:
                with open(path, "w") as f:
                    f.write(pid)
        return join

    # --- reading ------------------------------------------------------------------------------------------------------
    def pids(self) -> list[int]:
        return _pids_in(self.dirs["unified" if self.v2 else "freezer"])

    def oom_kills(self) -> int:
        """How many processes the kernel killed for the box's memory limit."""
        try:
            if self.v2:
                text = _read(self._file("memory", "memory.events"))
                return sum(int(line.split()[1]) for line in text.splitlines() if line.startswith("oom_kill "))
            text = _read(self._file("memory", "memory.oom_control"))
            kills = [int(line.split()[1]) for line in text.splitlines() if line.startswith("oom_kill ")]
            if kills:
                return kills[0]
            return int(_read(self._file("memory", "memory.failcnt")).strip() != "0")
        except (OSError, ValueError, IndexError):
            return 0

    def memory_peak(self) -> Optional[int]:
        name = "memory.peak" if self.v2 else "memory.max_usage_in_bytes"
        try:
            return int(_read(self._file("memory", name)).strip())
        except (OSError, ValueError):
            return None

    # --- control ----------------------------------------------------------------------------------------------------
    def freeze(self, timeout: float = FREEZE_TIMEOUT_S) -> float:
        """Stop every process of the box at once (forks in flight included); returns the seconds it took.

        A freeze that does not complete is the candidate's doing: on cgroup v1 a thread that execs while the freezer
        has frozen its siblings waits (killable, never freezable) for them to exit, and the group never reaches
        FROZEN. The box is then killed whole and CandidateFault (policy_violation) names what blocked it."""
        began = time.monotonic()
        if self.v2:
            _write(self._file("freezer", "cgroup.freeze"), "1")
        else:
            _write(self._file("freezer", "freezer.state"), "FROZEN")
        delay = 0.0001
        while not self.frozen():
            if time.monotonic() - began > timeout:
                blocking = sorted(self.unfrozen_tasks(), key=lambda t: "exec" not in t[2])  # de_thread first
                self.kill()
                what = "; ".join(f"pid {pid} thread {tid} waiting in {wchan or 'user space'}"
                                 for pid, tid, wchan in blocking[:4]) or "its tasks kept changing"
                raise CandidateFault(f"the box could not be frozen within {timeout:.0f} s ({what}): a process that "
                                     "keeps the box from stopping while the reference runs is not allowed, and the box "
                                     "was killed", verdict="policy_violation")
            time.sleep(delay)
            delay = min(delay * 2, 0.01)
        return time.monotonic() - began

    def unfrozen_tasks(self) -> list[tuple[int, int, str]]:
        """(pid, thread id, kernel wait channel) of the box's threads the freezer has not stopped."""
        found = []
        for pid in self.pids():
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                try:
                    wchan = _read(f"/proc/{pid}/task/{tid}/wchan").strip()
                except OSError:
                    continue
                if "refrigerator" not in wchan and "freezer" not in wchan and wchan != "do_freezer_trap":
                    found.append((pid, int(tid), "" if wchan == "0" else wchan))
        return found

    def frozen(self) -> bool:
        try:
            if self.v2:
                return "frozen 1" in _read(self._file("freezer", "cgroup.events"))
            return _read(self._file("freezer", "freezer.state")).strip() == "FROZEN"
        except OSError:
            return False

    def thaw(self) -> None:
        if self.v2:
            _write(self._file("freezer", "cgroup.freeze"), "0")
        else:
            _write(self._file("freezer", "freezer.state"), "THAWED")

    def kill(self, timeout: float = KILL_TIMEOUT_S) -> int:
        """Kill every process of the box and wait, within ``timeout``, until none is left; returns how many there
        were. Never raises: what is still there at the end is in ``self.left`` (the caller quarantines the box).

        v2 (5.14+): ``cgroup.kill``, which the kernel applies to every process, forks in flight included, repeated
        while processes remain. v1, and v2 before it: SIGKILL to every listed process while the group is frozen
        (nothing can fork between reading the list and killing it), then thawed so the signals are taken; the list
        is read again each pass. A frozen box may not finish freezing (see freeze): SIGKILL is sent anyway, and the
        thaw lets the killable waiters die."""
        if not any(os.path.isdir(d) for d in self.dirs.values()):
            return 0
        victims = set(self.pids())
        end = time.monotonic() + timeout
        has_kill = self.v2 and os.path.exists(self._file("freezer", "cgroup.kill"))
        while True:
            left = self.pids()
            if not left:
                self.left = []
                return len(victims)
            victims.update(left)
            if time.monotonic() > end:
                self.left = left
                return len(victims)
            try:
                if has_kill:
                    _write(self._file("freezer", "cgroup.kill"), "1")
                else:
                    self._freeze_kill_thaw()
            except OSError:
                pass
            time.sleep(0.02)

    def _freeze_kill_thaw(self) -> None:
        try:
            if self.v2:
                _write(self._file("freezer", "cgroup.freeze"), "1")
            else:
                _write(self._file("freezer", "freezer.state"), "FROZEN")
        except OSError:
            pass
        settle = time.monotonic() + 0.5
        while not self.frozen() and time.monotonic() < settle:
            time.sleep(0.005)
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.thaw()
        except OSError:
            pass

    def remove(self, timeout: float = KILL_TIMEOUT_S) -> bool:
        """Kill what is left and remove the group from every hierarchy. Never raises; True when it is gone."""
        if any(os.path.isdir(d) for d in self.dirs.values()):
            self.kill(timeout)
            for d in self.dirs.values():  # a half-made group (a judge died creating it): its other hierarchies
                for pid in _pids_in(d):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
        gone = True
        for path in self.dirs.values():
            for _ in range(200):
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY while the last processes exit
                    time.sleep(0.01)
            gone = gone and not os.path.isdir(path)
        return gone


def _pids_in(directory: str) -> list[int]:
    try:
        return [int(x) for x in _read(os.path.join(directory, "cgroup.procs")).split()]
    except (OSError, ValueError):
        return []


def remove_leftover(name: str, where: Optional[Layout] = None) -> bool:
    """Kill and remove a box's group that a dead judge left (without creating one). True when it is gone."""
    group = BoxCgroup(name, 0, 0, where, create=False, cpus=[])
    return not any(os.path.isdir(d) for d in group.dirs.values())
