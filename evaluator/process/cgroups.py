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

from evaluator.process import limits
from evaluator.process.cgroup_layout import CgroupUnavailable, Layout, _layout_cache, _read, _write, layout  # noqa: F401
from evaluator.process.protocol import CandidateFault

FREEZE_TIMEOUT_S = 10.0
KILL_TIMEOUT_S = 20.0  # a torch-sized process tree at the pids limit dies in seconds; past this the box is quarantined


class BoxCgroup:
    """One box's control group (in each v1 hierarchy, or the one v2 group)."""

    def __init__(
        self,
        name: str,
        memory_bytes: int,
        pids_max: int,
        where: Layout | None = None,
        create: bool = True,
        cpus: list[int] | None = None,
    ):
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
            _write(
                self._file("cpuset", "cpuset.mems"),
                _read(os.path.join(self.where.parents["cpuset"], "cpuset.mems")).strip(),
            )
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

    def memory_peak(self) -> int | None:
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
                what = (
                    "; ".join(
                        f"pid {pid} thread {tid} waiting in {wchan or 'user space'}" for pid, tid, wchan in blocking[:4]
                    )
                    or "its tasks kept changing"
                )
                raise CandidateFault(
                    f"the box could not be frozen within {timeout:.0f} s ({what}): a process that "
                    "keeps the box from stopping while the reference runs is not allowed, and the box "
                    "was killed",
                    verdict="policy_violation",
                )
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


def remove_leftover(name: str, where: Layout | None = None) -> bool:
    """Kill and remove a box's group that a dead judge left (without creating one). True when it is gone."""
    group = BoxCgroup(name, 0, 0, where, create=False, cpus=[])
    return not any(os.path.isdir(d) for d in group.dirs.values())
