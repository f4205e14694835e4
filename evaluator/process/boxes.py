"""Box ids: each candidate group (and each probe of the sandbox) holds one box id from a fixed range, taken under a
lock file, as contest judges' sandboxes do. The id gives the box everything that must not be shared with a judge
starting at the same moment: its uid, its control group's name and its directory (a bounded tmpfs for /tmp and
/dev/shm, its /etc/passwd and /etc/group, an empty root for its init).

The lock is an ``flock`` on ``ROOT/locks/ID.lock``, held by the judge process for the box's whole life: the kernel
drops it when that process dies however it dies, and whoever takes the id next first removes what the dead judge left
(its control group and processes, its uid's processes, its mount, its directory). Nothing is ever killed by uid outside
the box's own.
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import random
import shutil
import tempfile
from typing import Optional

from evaluator.process import processes

UID_BASE = processes.UID_RANGE[0]
BOX_COUNT = 1000  # ids 0..999: uids UID_BASE..UID_BASE+999; the probe takes one like any job
MS_NOSUID, MS_NODEV = 0x2, 0x4
MNT_DETACH = 2
_LIBC = ctypes.CDLL(None, use_errno=True)


class BoxesExhausted(RuntimeError):
    """Every box id is held by a live judge."""


def root() -> str:
    """Where the boxes' locks and directories live: ``PKB_BOX_ROOT``, else /run/pkb-arena (tmpfs, gone at reboot with
    the boxes it described), else the temporary directory."""
    configured = os.environ.get("PKB_BOX_ROOT")
    if configured:
        return configured
    if os.path.isdir("/run") and os.access("/run", os.W_OK):
        return "/run/pkb-arena"
    return os.path.join(tempfile.gettempdir(), "pkb-arena-boxes")


def cgroup_name(box_id: int) -> str:
    return f"box-{box_id}"


class Box:
    """A held box id (see the module docstring); ``release()`` gives it back."""

    def __init__(self, box_id: int, lock_fd: int, base: str):
        self.id, self.uid = box_id, UID_BASE + box_id
        self.lock_fd: Optional[int] = lock_fd
        self.dir = os.path.join(base, str(box_id))
        self.fs = os.path.join(self.dir, "fs")  # the bounded tmpfs: tmp/ and shm/
        self.etc = os.path.join(self.dir, "etc")
        self.empty = os.path.join(self.dir, "empty")
        self.mounted = False

    @property
    def name(self) -> str:
        return cgroup_name(self.id)

    @property
    def user_name(self) -> str:
        return f"pkb-box-{self.id}"

    def prepare(self) -> None:
        """The box's directory afresh: root-only, with its /etc files and its init's empty root."""
        for path in (self.dir, self.fs, self.etc, self.empty):
            os.makedirs(path, mode=0o700, exist_ok=True)
        os.chmod(self.dir, 0o700)
        os.chmod(self.empty, 0o555)
        os.chmod(self.etc, 0o755)
        name = self.user_name
        files = {"passwd": f"root:x:0:0:root:/root:/usr/sbin/nologin\n{name}:x:{self.uid}:{self.uid}::/tmp:/bin/sh\n",
                 "group": f"root:x:0:\n{name}:x:{self.uid}:\n"}
        for filename, text in files.items():
            path = os.path.join(self.etc, filename)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o644)

    def mount_fs(self, size_bytes: int) -> None:
        """A tmpfs of ``size_bytes`` for the box's /tmp and /dev/shm: its pages are charged to the box's memory
        group, and unmounting it frees them all at once, whatever the candidate left there."""
        options = f"size={int(size_bytes)},nr_inodes=65536,mode=0755".encode()
        if _LIBC.mount(b"tmpfs", self.fs.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"cannot mount the box's tmpfs on {self.fs}: {os.strerror(err)}")
        self.mounted = True
        for sub in ("tmp", "shm"):
            path = os.path.join(self.fs, sub)
            os.mkdir(path, 0o700)
            os.chown(path, self.uid, self.uid)

    def clear(self) -> None:
        """Remove whatever an earlier holder of this id left on the file system (its mount, its directory)."""
        _unmount_all(self.fs)
        self.mounted = False
        shutil.rmtree(self.dir, ignore_errors=True)

    def release(self) -> None:
        self.clear()
        if self.lock_fd is not None:
            try:
                fcntl.flock(self.lock_fd, fcntl.LOCK_UN)
            finally:
                os.close(self.lock_fd)
                self.lock_fd = None


def acquire(count: Optional[int] = None) -> Box:
    """Take a free box id (from a random start, so judges starting together rarely try the same one first), clear
    its leftovers' files and processes of its uid, and return it held. The caller removes the id's control group
    (evaluator/process/cgroups.py does that when it creates one of the same name)."""
    count = count or int(os.environ.get("PKB_BOX_COUNT", BOX_COUNT))
    base = root()
    locks = os.path.join(base, "locks")
    os.makedirs(locks, mode=0o700, exist_ok=True)
    os.chmod(base, 0o711)
    start = random.SystemRandom().randrange(count)
    for step in range(count):
        box_id = (start + step) % count
        fd = os.open(os.path.join(locks, f"{box_id}.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                continue
            raise
        box = Box(box_id, fd, base)
        try:
            processes.reap(box.uid, None)  # a dead judge's candidate processes (the box's uid is this box's alone)
            box.clear()
            box.prepare()
        except BaseException:
            box.release()
            raise
        return box
    raise BoxesExhausted(f"all {count} sandbox box ids under {base} are held by running judges")


def _mount_points() -> list[str]:
    try:
        with open("/proc/self/mountinfo") as f:
            return [line.split()[4].replace("\\040", " ") for line in f]
    except OSError:
        return []


def _unmount_all(path: str) -> None:
    """Unmount everything stacked on ``path`` (lazily: a process still inside cannot keep the mount)."""
    for _ in range(16):
        if path not in _mount_points():
            return
        if _LIBC.umount2(path.encode(), MNT_DETACH) != 0:
            return


def sweep_free(count: Optional[int] = None) -> int:
    """Clear every box id that no live judge holds but that a dead one left something of (a control group, a
    mount, a directory): what a worker does when it restarts after a crash. Returns how many it cleared."""
    from evaluator.process import cgroups  # the control groups' module needs nothing of this one

    base = root()
    if not os.path.isdir(os.path.join(base, "locks")):
        return 0
    cleared = 0
    count = count or int(os.environ.get("PKB_BOX_COUNT", BOX_COUNT))
    for name in os.listdir(os.path.join(base, "locks")):
        stem = name[:-len(".lock")] if name.endswith(".lock") else ""
        if not stem.isdigit() or int(stem) >= count:
            continue
        box_id = int(stem)
        fd = os.open(os.path.join(base, "locks", name), os.O_RDWR | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # held: a live judge's box
        box = Box(box_id, fd, base)
        try:
            left = os.path.exists(box.dir)
            try:
                where = cgroups.layout()
                group_dirs = [os.path.join(p, box.name) for p in where.parents.values()]
                if any(os.path.isdir(d) for d in group_dirs):
                    left = True
                    cgroups.remove_leftover(box.name, where)
            except cgroups.CgroupUnavailable:
                pass
            if left:
                processes.reap(box.uid, None)
                box.clear()
                cleared += 1
        finally:
            box.release()
    return cleared
