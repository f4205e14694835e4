"""Where a host's sandbox boxes get their control groups: cgroup v2 with one parent, or the v1 hierarchies (memory,
pids, freezer, and cpuset where it is mounted), found once per judge process. The parent bounds all boxes together
(pids.max: a share of the host's pid space) and hands its controllers down. See evaluator/process/cgroups.py for a
box's own group, and docs/threat-model.md, section 6.
"""

from __future__ import annotations

import os

from evaluator.process import limits

V1_CONTROLLERS = ("memory", "pids", "freezer")
V1_OPTIONAL = ("cpuset",)  # the box's cores: used where the host mounts it (docs/threat-model.md, the box's limits)
V2_CONTROLLERS = ("memory", "pids")
V2_OPTIONAL = ("cpuset",)
PARENT_NAME = "pkb-arena"


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


def _own_path(controller: str | None) -> str:
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
            try:
                _enable_v2(os.path.dirname(parent), wanted)
                _mkdir(parent)
                _enable_v2(parent, wanted)
            except OSError:  # an optional controller the host will not hand down: the boxes go without it
                wanted = V2_CONTROLLERS
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
        mounted = next((m[0] for m in mounts if m[1] == "cgroup" and controller in m[2]), None)
        if mounted is None:
            raise CgroupUnavailable(
                f"no cgroup v2 hierarchy with {', '.join(V2_CONTROLLERS)} and no cgroup v1 "
                f"{controller} hierarchy is mounted"
            )
        base = configured or os.path.join(_own_path(controller).strip("/"), PARENT_NAME)
        parent = os.path.join(mounted, base)
        try:
            os.makedirs(parent, mode=0o755, exist_ok=True)
        except OSError as exc:
            raise CgroupUnavailable(f"cannot create the boxes' cgroup v1 {controller} parent {parent}: {exc}") from exc
        v1[controller] = parent
    _limit_parent_pids(v1["pids"])
    for controller in V1_OPTIONAL:
        mounted = next((m[0] for m in mounts if m[1] == "cgroup" and controller in m[2]), None)
        if mounted is None:
            continue
        parent = os.path.join(mounted, configured or os.path.join(_own_path(controller).strip("/"), PARENT_NAME))
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
    while not os.path.exists(os.path.join(path, "cpuset.cpus")) or not _read(os.path.join(path, "cpuset.cpus")).strip():
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
