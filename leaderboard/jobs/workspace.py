"""Each worker process's own directory under PKB_WORK_DIR, and what a restarted worker does about a dead one's.

A worker killed with SIGKILL (OOM killer, a crash, a host reboot of the container) runs no clean-up: its jobs' scratch
directories stay on disk, its rank processes may outlive it, and its leases run until they expire. So every worker
process works in ``PKB_WORK_DIR/<host>--<id>/`` and holds an exclusive ``flock`` on its ``.lock`` for as long as it
lives; the kernel drops that lock at the process's death, whatever killed it. Any worker of the same host that can
take the lock knows the owner is gone, and then (:func:`recover_dead`) kills what still runs from that directory,
removes it, and ends the dead worker's leases at once, so its jobs are re-queued in seconds rather than after the
lease (PKB_LEASE_SECONDS). Workers on other hosts sharing the directory are left alone (their names differ).
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

from leaderboard.jobs import judge_commands

log = logging.getLogger("leaderboard.jobs.workspace")
LOCK = ".lock"
OWNER = "owner"


@dataclass
class Workspace:
    path: str
    worker: str
    lock_fd: int


def _host_prefix() -> str:
    return _safe(socket.gethostname()) + "--"


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:120]


def claim(root: Path | str, worker: str) -> Workspace:
    """This process's directory, locked until it exits."""
    path = Path(root) / (_host_prefix() + _safe(worker.split(":", 1)[-1]))
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    fd = os.open(path / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a live owner of the same name: an error, never shared
    (path / OWNER).write_text(worker)
    return Workspace(str(path), worker, fd)


def release(space: Workspace) -> None:
    """A worker's normal exit: its jobs' directories are gone already; remove its own, then let the lock go."""
    shutil.rmtree(space.path, ignore_errors=True)
    try:
        os.close(space.lock_fd)
    except OSError:
        pass


def remove(path: Path | str) -> None:
    """Remove a job's or a dead worker's directory whatever a candidate left in it: ``shutil.rmtree`` first, and
    where something stays (a tree too deep for its recursion, a mount, a mode it cannot pass) the judge's own
    removal (``pkb sweep DIR --remove``: iterative, unmounting). Never raises: a directory left is logged."""
    try:
        shutil.rmtree(path, ignore_errors=True)
    except Exception:  # noqa: BLE001 - RecursionError on a deep chain, and anything else: the sweep below
        pass
    if not os.path.lexists(path):
        return
    try:
        if judge_commands.sweep_orphans(str(path), remove=True).get("left"):
            log.warning("could not remove %s", path)
    except Exception:
        log.exception("could not remove %s", path)


def sweep_boxes() -> dict:
    """Clear the sandbox boxes that dead judges left and try the quarantined ones again (``pkb sweep`` of an empty
    directory: it kills nothing of a live judge); the ids still quarantined are logged. Run at a worker's boot."""
    try:
        with tempfile.TemporaryDirectory(prefix="pkb-box-sweep-") as empty:
            swept = judge_commands.sweep_orphans(empty)
    except judge_commands.JudgeCommandFailed:
        log.exception("the sweep of the sandbox boxes failed")
        return {}
    if swept.get("boxes_quarantined"):
        log.warning(
            "sandbox boxes quarantined (their clean-up failed; no judge uses them until a sweep finds them clean): %s",
            swept["boxes_quarantined"],
        )
    return {"boxes_cleared": swept.get("boxes_cleared", 0), "boxes_quarantined": swept.get("boxes_quarantined", [])}


def recover_dead(root: Path | str, release=None, boxes: bool = False) -> dict:
    """Sweep every directory of this host's dead workers: kill what still runs there (rank processes, daemons of its
    candidates' uids), remove it, and call ``release(worker_id)`` to end the dead worker's leases; with ``boxes`` (at
    boot), the sandbox boxes too (sweep_boxes). Returns counts."""
    report = {"workers": 0, "killed": 0, "removed": 0, "released": 0}
    if boxes:
        report.update(sweep_boxes())
    root = Path(root)
    if not root.is_dir():
        return report
    for path in sorted(root.glob(_host_prefix() + "*")):
        lock = path / LOCK
        if not lock.is_file():
            continue
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its owner lives
            try:
                worker = (path / OWNER).read_text().strip()
            except OSError:
                worker = ""
            try:
                swept = judge_commands.sweep_orphans(str(path), remove=True)
            except judge_commands.JudgeCommandFailed:
                log.exception("dead worker %s: the sweep of %s failed", worker or path.name, path)
                continue  # its lock is taken again by the next worker's boot sweep
            report["workers"] += 1
            report["killed"] += swept["killed_outliving"]
            remove(path)
            report["removed"] += not path.exists()
            if swept.get("boxes_quarantined"):
                log.warning(
                    "sandbox boxes quarantined (their clean-up failed; no judge uses them until a sweep "
                    "finds them clean): %s",
                    swept["boxes_quarantined"],
                )
            if worker and release is not None:
                report["released"] += release(worker)
            log.warning(
                "dead worker %s: killed %s leftover processes, removed %s, released %s leases",
                worker or path.name,
                swept["killed_outliving"],
                path,
                report["released"],
            )
        finally:
            os.close(fd)
    return report
