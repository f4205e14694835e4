"""Box ids: each candidate group (and each probe of the sandbox) holds one box id from a fixed range, taken under a
lock file, as contest judges' sandboxes do. The id gives the box everything that must not be shared with a judge
starting at the same moment: its uid, its control group's name and its directory (a bounded tmpfs for /tmp and
/dev/shm, its /etc/passwd and /etc/group, an empty root for its init).

The lock is an ``flock`` on ``ROOT/locks/ID.lock``, held by the judge process for the box's whole life: the kernel
drops it when that process dies however it dies, and whoever takes the id next first removes what the dead judge left
(its control group and processes, its uid's processes, its mount, its directory). Nothing is ever killed by uid outside
the box's own.

A box whose clean-up did not finish (a process that would not die, a control group that would not go, a tree that
would not be removed) is quarantined: ``ROOT/quarantine/ID`` says why, no judge takes the id while it is there, and
the next sweep (``pkb sweep``, run by every worker at boot) tries again and lifts it once the box is clean.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import random
import tempfile

from evaluator.process import processes, removal

UID_BASE = processes.UID_RANGE[0]
BOX_COUNT = 1000  # ids 0..999: uids UID_BASE..UID_BASE+999; the probe takes one like any job
MS_NOSUID, MS_NODEV, MS_BIND = 0x2, 0x4, 0x1000
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
        self.lock_fd: int | None = lock_fd
        self.dir = os.path.join(base, str(box_id))
        self.fs = os.path.join(self.dir, "fs")  # the bounded tmpfs: tmp/ and shm/
        self.etc = os.path.join(self.dir, "etc")
        self.empty = os.path.join(self.dir, "empty")
        self.mounted = False
        self.scratch: str | None = None  # the group's scratch directory, a bounded tmpfs mounted by the box

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
        files = {
            "passwd": f"root:x:0:0:root:/root:/usr/sbin/nologin\n{name}:x:{self.uid}:{self.uid}::/tmp:/bin/sh\n",
            "group": f"root:x:0:\n{name}:x:{self.uid}:\n",
        }
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

    def mount_scratch(self, path: str, size_bytes: int, files: int, keep: tuple = ()) -> None:
        """A tmpfs of ``size_bytes`` and ``files`` inodes on the group's scratch directory ``path`` (rank directories,
        outputs, builds): the candidate's writes there end in ENOSPC at the bound, their pages are charged to the
        box's memory group, and unmounting frees them whatever their shape. Subdirectories already in ``path`` are
        made again on the tmpfs, except those named in ``keep`` (the judge's own, such as its logs), which are bound
        back from the disk so that they outlive the scratch."""
        existing = sorted(e.name for e in os.scandir(path) if e.is_dir(follow_symlinks=False))
        kept = {
            name: os.open(os.path.join(path, name), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            for name in existing
            if name in keep
        }
        try:
            mode = os.stat(path).st_mode & 0o777
            options = f"size={int(size_bytes)},nr_inodes={int(files)},mode={mode:o}".encode()
            if _LIBC.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"cannot mount the group's scratch on {path}: {os.strerror(err)}")
            self.scratch = path
            for name in existing:
                os.mkdir(os.path.join(path, name), 0o700)
                if (
                    name in kept
                    and _LIBC.mount(
                        f"/proc/self/fd/{kept[name]}".encode(), os.path.join(path, name).encode(), None, MS_BIND, None
                    )
                    != 0
                ):
                    err = ctypes.get_errno()
                    raise OSError(err, f"cannot bind {name} back into the scratch: {os.strerror(err)}")
        finally:
            for fd in kept.values():
                os.close(fd)

    def unmount_scratch(self) -> None:
        """Detach the group's scratch (and the logs bound below it: the disk's copy shows again)."""
        if self.scratch is not None:
            removal.unmount_below(self.scratch)
            self.scratch = None

    def clear(self) -> bool:
        """Remove whatever an earlier holder of this id left on the file system (its mounts, its directory). True
        when nothing is left."""
        self.unmount_scratch()
        removal.unmount_below(self.fs)
        self.mounted = False
        return not removal.remove_tree(self.dir)["left"]

    def quarantine(self, reason: str) -> None:
        """Keep this id from every judge until a sweep finds it clean (see the module docstring)."""
        folder = os.path.join(os.path.dirname(self.dir), "quarantine")
        os.makedirs(folder, mode=0o700, exist_ok=True)
        with open(os.path.join(folder, str(self.id)), "w") as f:
            f.write(reason[:4000] + "\n")

    def release(self, clean: bool = True, reason: str = "") -> None:
        """Give the id back; ``clean=False`` (its processes or control group would not go) quarantines it first."""
        try:
            cleared = self.clear()
            if not clean or not cleared:
                self.quarantine(reason or f"its directory {self.dir} could not be removed")
        finally:
            self._unlock()

    def _unlock(self) -> None:
        if self.lock_fd is not None:
            try:
                fcntl.flock(self.lock_fd, fcntl.LOCK_UN)
            finally:
                os.close(self.lock_fd)
                self.lock_fd = None


def acquire(count: int | None = None) -> Box:
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
        if os.path.exists(os.path.join(base, "quarantine", str(box_id))):  # read under the id's lock
            _release_lock(fd)
            continue
        box = Box(box_id, fd, base)
        try:
            processes.reap(box.uid, None)  # a dead judge's candidate processes (the box's uid is this box's alone)
            if not box.clear():
                box.release(clean=False, reason=f"a dead judge's directory {box.dir} could not be removed")
                continue
            box.prepare()
        except BaseException:
            box.release()
            raise
        return box
    raise BoxesExhausted(f"all {count} sandbox box ids under {base} are held by running judges or quarantined")


def quarantined(base: str | None = None) -> dict[int, str]:
    """The quarantined box ids and why."""
    folder = os.path.join(base or root(), "quarantine")
    found: dict[int, str] = {}
    try:
        names = os.listdir(folder)
    except OSError:
        return found
    for name in names:
        if name.isdigit():
            try:
                with open(os.path.join(folder, name)) as f:
                    found[int(name)] = f.read().strip()
            except OSError:
                found[int(name)] = ""
    return found


def _release_lock(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def sweep_free(count: int | None = None) -> int:
    """Clear every box id that no live judge holds but that a dead one left something of (a control group, a
    mount, a directory), and try every quarantined one again, lifting its quarantine once it is clean: what a worker
    does when it starts. Returns how many it cleared; ``quarantined()`` lists what stays."""
    from evaluator.process import cgroups  # the control groups' module needs nothing of this one

    base = root()
    if not os.path.isdir(os.path.join(base, "locks")):
        return 0
    cleared = 0
    count = count or int(os.environ.get("PKB_BOX_COUNT", BOX_COUNT))
    held = quarantined(base)
    for name in os.listdir(os.path.join(base, "locks")):
        stem = name[: -len(".lock")] if name.endswith(".lock") else ""
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
        clean, reason = True, ""
        try:
            left = os.path.exists(box.dir) or box_id in held
            try:
                where = cgroups.layout()
                group_dirs = [os.path.join(p, box.name) for p in where.parents.values()]
                if any(os.path.isdir(d) for d in group_dirs):
                    left = True
                    if not cgroups.remove_leftover(box.name, where):
                        clean, reason = False, f"its control group {box.name} would not go"
            except cgroups.CgroupUnavailable:
                pass
            if left:
                processes.reap(box.uid, None)
                if clean and box.clear():
                    cleared += 1
                    if box_id in held:
                        os.unlink(os.path.join(base, "quarantine", str(box_id)))
                else:
                    clean, reason = False, reason or f"its directory {box.dir} could not be removed"
        finally:
            box.release(clean=clean, reason=reason)
    return cleared
