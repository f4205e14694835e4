"""Finding and killing what a candidate left running, and removing what it left in shared places.

Used by the sandbox at the end of every candidate group, and by a worker that restarts after a crash for the scratch
of jobs it no longer holds. Works from /proc alone (no psutil), so it runs in the judge without extra packages.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from typing import cast

UID_RANGE = (3_000_000, 4_000_000)  # candidate uids: numeric only, one per box id (evaluator/process/boxes.py)
SWEPT_DIRS = ("/tmp", "/var/tmp", "/dev/shm")  # world-writable places whose candidate-owned entries are removed


def reap(uid: int | None, scratch_root: str | None) -> dict:
    """Kill every process of ``uid`` and every process whose scratch path lies under ``scratch_root``, then remove
    the uid's files in shared places. Returns counts."""
    report = {"killed_outliving": 0, "removed_files": 0}
    for _ in range(20):
        pids = set(processes_of(uid)) if uid is not None else set()
        if scratch_root:
            pids.update(processes_with_scratch(scratch_root))
        pids.discard(os.getpid())
        if not pids:
            break
        report["killed_outliving"] += len(pids)
        if uid is not None:
            kill_as(uid)  # kill(-1) as the uid: everything it owns, in one sweep
        for pid in pids:
            signal_pid(pid, signal.SIGKILL)
        time.sleep(0.02)
    if uid is None:
        return report
    for place in SWEPT_DIRS:
        try:
            entries = list(os.scandir(place))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
                report["removed_files"] += 1
            except OSError:
                pass
    return report


def sweep_orphans(root: str) -> dict:
    """What a judge killed before its own clean-up (an overrun, a lost lease) left under ``root``, its temporary
    directory: every rank still carrying a scratch path there, and every process of a candidate uid that owns a
    directory there (daemons that dropped the scratch path), reaped as Sandbox.cleanup would have."""
    report = reap(None, os.path.abspath(root))
    uids = set()
    # Directories given to a candidate's uid (pkb-judge-*/cand/{out,rank*,tmp}, a few levels below a worker's root).
    base = os.path.abspath(root).rstrip("/").count("/")
    for here, dirs, _files in os.walk(root):
        if here.count("/") - base >= 5:
            dirs[:] = []
        for name in dirs:
            try:
                owner = os.lstat(os.path.join(here, name)).st_uid
            except OSError:
                continue
            if UID_RANGE[0] <= owner < UID_RANGE[1]:
                uids.add(owner)
    for uid in sorted(uids):
        for key, value in reap(uid, None).items():
            report[key] += value
    return report


def signal_pid(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def processes_of(uid: int) -> list[int]:
    """Live (not zombie) process ids whose real or effective uid is ``uid`` (from /proc; no psutil)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as f:
                fields = dict(line.split(b":", 1) for line in f if b":" in line)
            if fields.get(b"State", b"").strip()[:1] in (b"Z", b"X"):
                continue
            if uid in [int(x) for x in fields[b"Uid"].split()[:2]]:
                found.append(int(name))
        except (OSError, ValueError, KeyError):
            pass
    return found


def processes_with_scratch(root: str) -> list[int]:
    """Process ids whose environment has PKB_SCRATCH inside ``root`` (readable for the judge's own uid, or root)."""
    needle = b"PKB_SCRATCH=" + os.path.join(root, "").encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if any(item.startswith(needle) for item in f.read().split(b"\0")):
                    found.append(int(name))
        except OSError:
            pass
    return found


def as_user(uid: int):
    def drop() -> None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)

    return drop


def kill_as(uid: int) -> None:
    try:
        subprocess.run(
            [sys.executable, "-S", "-c", "import os, signal; os.kill(-1, signal.SIGKILL)"],
            preexec_fn=as_user(uid),
            env={},
            timeout=10,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        pass


def stop_all(pgids, uid: int | None, scratch_root: str | None) -> set:
    """SIGSTOP for a group without a control group (the sandbox's fallback): its ranks' process groups, then all of
    the uid's processes, or without one those carrying the group's scratch path. Best effort only: a process that
    forks and exits between sweeps has a new pid each time, which is why a box freezes its control group instead.
    Returns the pids stopped outside the process groups."""
    stopped: set = set()
    for pgid in pgids:
        signal_group(pgid, signal.SIGSTOP)
    if uid is None and not scratch_root:
        return stopped
    for _ in range(3):
        # Without a uid there is a scratch_root (returned above otherwise).
        found = processes_of(uid) if uid is not None else processes_with_scratch(cast(str, scratch_root))
        fresh = [pid for pid in found if pid not in stopped and pid != os.getpid()]
        if not fresh:
            break
        for pid in fresh:
            signal_pid(pid, signal.SIGSTOP)
        stopped.update(fresh)
    return stopped


def continue_all(pgids, stopped) -> None:
    for pgid in pgids:
        signal_group(pgid, signal.SIGCONT)
    for pid in stopped:
        signal_pid(pid, signal.SIGCONT)
