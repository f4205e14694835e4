"""Acting on a sandbox box once it is set up (evaluator/process/sandbox.py): pausing and resuming it while the other
group runs, reading whether its memory limit killed it, and ending it. Ending it cannot be stopped by what the
candidate did: every step runs whatever the ones before met, and a box whose processes or control group would not go
is quarantined (evaluator/process/boxes.py) and reported as the candidate's fault once everything else is done.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from typing import IO, Any, cast

from evaluator.process import boxes, cgroups, processes
from evaluator.process.protocol import CandidateFault


class BoxControl:
    """The control half of :class:`evaluator.process.sandbox.Sandbox` (its attributes are set there)."""

    # Set by Sandbox.__init__ (what each means is said there); declared here so that these methods are checked.
    enabled: bool
    closed: bool
    paused: bool
    uid: int | None
    scratch_root: str | None
    box: boxes.Box | None
    cgroup: cgroups.BoxCgroup | None
    holder: subprocess.Popen[bytes] | None
    init_pid: int | None
    netns_fd: int | None
    ipcns_fd: int | None
    pidns_fd: int | None
    pause_s: list[float]
    _stopped: set[int]
    failures: list[str]
    memory_bytes: int
    notes: dict[str, Any]
    # Sandbox's method closing the current rank's copy of the seccomp filter; an annotation, not a stub, so that no
    # class attribute here can shadow it whichever base ends up defining it.
    _close_seccomp: Callable[[], None]

    # --- control ----------------------------------------------------------------------------------------------------
    def pause(self, pgids: Iterable[int]) -> None:
        """Stop every process of the box at once (the freezer: a process forking or in another session cannot slip
        through); without a control group, SIGSTOP passes over what can be found."""
        if not self.enabled or self.closed:
            return
        self.paused = True
        began = time.monotonic()
        if self.cgroup is not None:
            self.cgroup.freeze()
        else:
            self._stopped = processes.stop_all(pgids, self.uid, self.scratch_root)
        self.pause_s.append(time.monotonic() - began)

    def resume(self, pgids: Iterable[int]) -> None:
        if not self.paused:
            return
        self.paused = False
        if self.cgroup is not None:
            self.cgroup.thaw()
            return
        processes.continue_all(pgids, self._stopped)

    def out_of_memory(self) -> bool:
        """Whether the kernel killed a process of the box for its memory limit."""
        return self.cgroup is not None and self.cgroup.oom_kills() > 0

    def memory_message(self) -> str:
        return f"the candidate exceeded its memory limit of {self.memory_bytes / 2**30:.1f} GB"

    def cleanup(self) -> dict:
        """Kill every process of the box (its control group: daemons in other sessions included), then everything of
        its uid that could be outside it and its files in shared places; the box's tmpfs goes with close(). Never
        raises: a kill that cannot finish within its bound leaves ``self.failures`` for close() to report."""
        if self.closed:
            return {"killed_outliving": 0, "removed_files": 0}
        self.closed = True
        report = {"killed_outliving": 0, "removed_files": 0}
        if self.cgroup is not None:
            ours = {self.init_pid, self.holder.pid if self.holder else None}
            report["killed_outliving"] = len([p for p in self.cgroup.pids() if p not in ours])
            self.notes["memory"] = {
                "limit_bytes": self.memory_bytes,
                "peak_bytes": self.cgroup.memory_peak(),
                "oom_kills": self.cgroup.oom_kills(),
            }
            self.cgroup.kill()
            if self.cgroup.left:
                self.failures.append(f"processes {self.cgroup.left[:10]} outlived the kill")
        if self.pause_s:
            ordered = sorted(self.pause_s)
            self.notes["pauses"] = {
                "how": "freezer" if self.cgroup is not None else "SIGSTOP passes",
                "count": len(ordered),
                "median_ms": round(ordered[len(ordered) // 2] * 1e3, 3),
                "max_ms": round(ordered[-1] * 1e3, 3),
            }
        self._stop_holder()
        try:
            swept = processes.reap(self.uid, None if self.cgroup is not None else self.scratch_root)
            report["killed_outliving"] += swept["killed_outliving"]
            report["removed_files"] = swept["removed_files"]
        except OSError as exc:
            self.failures.append(f"the sweep of its uid failed: {exc}")
        return report

    def _stop_holder(self) -> None:
        holder, self.holder = self.holder, None
        if holder is None:
            return
        # Sandbox starts the holder with stdin and stdout pipes, so neither is None.
        stdin, stdout = cast(IO[bytes], holder.stdin), cast(IO[bytes], holder.stdout)
        for step in (lambda: stdin.close(), lambda: holder.wait(10)):
            try:
                step()
            except (OSError, subprocess.TimeoutExpired):
                pass
        if holder.poll() is None:
            holder.kill()  # pid 1 of the box dies with it, and with it every process of the box's pid namespace
            try:
                holder.wait(10)
            except subprocess.TimeoutExpired:
                self.failures.append(f"the box's init holder {holder.pid} would not die")
        try:
            stdout.close()
        except OSError:
            pass

    def close(self) -> None:
        """End the box: its processes, namespaces, control group and tmpfs, then give its id back. Every step runs
        whatever the ones before it met; a box whose processes or control group would not go is quarantined (its id
        not reused until a sweep finds it clean), and CandidateFault then says so, once everything else is done. The
        group's scratch goes too (prepare): a judge harvests the group's builds before closing its box; its logs stay
        on the disk below."""
        if not self.closed:
            self.cleanup()
        self.closed = True
        self._stop_holder()
        self._close_seccomp()
        for attr in ("netns_fd", "ipcns_fd", "pidns_fd"):
            fd = getattr(self, attr)
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
                setattr(self, attr, None)
        if self.cgroup is not None:
            if not self.cgroup.remove():
                self.failures.append(f"its control group {self.cgroup.name} would not go")
            self.cgroup = None
        if self.box is not None:
            box, self.box = self.box, None
            reason = "; ".join(self.failures)
            try:
                box.release(clean=not self.failures, reason=reason)
            except OSError as exc:
                self.failures.append(f"its id could not be released: {exc}")
            if self.failures:
                self.notes["quarantined"] = f"box {box.id}: {'; '.join(self.failures)}"
                print(f"pkb: sandbox box {box.id} quarantined: {'; '.join(self.failures)}", file=sys.stderr)
        if self.failures:
            failures, self.failures = self.failures, []
            raise CandidateFault("the candidate's box could not be cleaned up: " + "; ".join(failures))
