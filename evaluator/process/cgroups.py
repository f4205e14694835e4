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

V1_CONTROLLERS = ("memory", "pids", "freezer")
V2_CONTROLLERS = ("memory", "pids")
PARENT_NAME = "pkb-arena"
FREEZE_TIMEOUT_S = 10.0


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

    def __init__(self, version: int, parents: dict[str, str]):
        self.version, self.parents = version, parents

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
        try:
            _enable_v2(os.path.dirname(parent))
            _mkdir(parent)
            _enable_v2(parent)
            if not os.path.exists(os.path.join(parent, "cgroup.freeze")):
                raise CgroupUnavailable(f"{parent} has no cgroup.freeze (the v2 freezer needs Linux 5.2)")
        except OSError as exc:
            raise CgroupUnavailable(f"cannot set up the boxes' cgroup v2 parent {parent}: {exc}") from exc
        return Layout(2, {"unified": parent})
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
    return Layout(1, v1)


def _enable_v2(directory: str) -> None:
    """Make ``memory`` and ``pids`` available to ``directory``'s children (v2 hands controllers down level by
    level)."""
    enabled = _read(os.path.join(directory, "cgroup.subtree_control")).split()
    missing = [c for c in V2_CONTROLLERS if c not in enabled]
    if missing:
        _write(os.path.join(directory, "cgroup.subtree_control"), " ".join("+" + c for c in missing))


class BoxCgroup:
    """One box's control group (in each v1 hierarchy, or the one v2 group)."""

    def __init__(self, name: str, memory_bytes: int, pids_max: int, where: Optional[Layout] = None,
                 create: bool = True):
        self.where = where or layout()
        self.name, self.memory_bytes, self.pids_max = name, memory_bytes, pids_max
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
            return
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
        """Stop every process of the box at once (forks in flight included); returns the seconds it took."""
        began = time.monotonic()
        if self.v2:
            _write(self._file("freezer", "cgroup.freeze"), "1")
        else:
            _write(self._file("freezer", "freezer.state"), "FROZEN")
        delay = 0.0001
        while not self.frozen():
            if time.monotonic() - began > timeout:
                raise RuntimeError(f"the box {self.name} did not freeze within {timeout:.0f} s")
            time.sleep(delay)
            delay = min(delay * 2, 0.01)
        return time.monotonic() - began

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

    def kill(self, timeout: float = 10.0) -> int:
        """Kill every process of the box and wait until none is left; returns how many there were."""
        if not all(os.path.isdir(d) for d in self.dirs.values()):
            return 0
        victims = self.pids()
        if self.v2 and os.path.exists(self._file("freezer", "cgroup.kill")):
            _write(self._file("freezer", "cgroup.kill"), "1")
        end = time.monotonic() + timeout
        while True:
            left = self.pids()
            if not left:
                return len(victims)
            if not self.v2 or not os.path.exists(self._file("freezer", "cgroup.kill")):
                # v1 (and v2 before 5.14): frozen, nothing can fork while the list is killed; SIGKILL is taken on thaw.
                try:
                    self.freeze(timeout=2.0)
                except (OSError, RuntimeError):
                    pass
                for pid in self.pids():
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
                victims = sorted(set(victims) | set(left))
                try:
                    self.thaw()
                except OSError:
                    pass
            if time.monotonic() > end:
                raise RuntimeError(f"the box {self.name} still holds processes {left[:10]} after being killed")
            time.sleep(0.01)

    def remove(self) -> int:
        """Kill what is left and remove the group (from every hierarchy). Returns the processes killed."""
        killed = 0
        if all(os.path.isdir(d) for d in self.dirs.values()):
            killed = self.kill()
        elif any(os.path.isdir(d) for d in self.dirs.values()):
            # Half made (a judge died while creating it): kill through whichever hierarchy holds processes.
            for d in self.dirs.values():
                for pid in _pids_in(d):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
        for path in self.dirs.values():
            for _ in range(200):
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY while the last processes exit
                    time.sleep(0.01)
        return killed

def _pids_in(directory: str) -> list[int]:
    try:
        return [int(x) for x in _read(os.path.join(directory, "cgroup.procs")).split()]
    except (OSError, ValueError):
        return []


def remove_leftover(name: str, where: Optional[Layout] = None) -> None:
    """Kill and remove a box's group that a dead judge left (without creating one)."""
    BoxCgroup(name, 0, 0, where, create=False)
