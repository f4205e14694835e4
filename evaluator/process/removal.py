"""Removing a directory tree that a candidate shaped: whatever its depth, file count, permissions, open files or
mounts, without recursion and without following a link out of it.

``shutil.rmtree`` recurses once per level (Python 3.11), so a 5,000-deep chain of directories raises RecursionError
past its ``ignore_errors``; a mode 000 directory stops it; a mount below it is EBUSY. This walk keeps its own stack
of open directory descriptors (``os.scandir`` on a descriptor, ``unlink``/``rmdir`` relative to the parent's), so the
only bound is the process's descriptor limit, which it respects by closing a parent's descriptor while it works
below it and reopening it by name (``O_NOFOLLOW``) from its own parent on the way back up. Anything mounted at or
below the tree is unmounted lazily first (``MNT_DETACH``: a process still inside cannot keep it).

Standard library only: the judge, its ``sweep`` command (the site worker's boot sweep and runner's clean-up) and the
box's clean-up all use it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from typing import Any

MNT_DETACH = 2
_LIBC = ctypes.CDLL(None, use_errno=True)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def mount_points() -> list[str]:
    """Every mount point this process sees, deepest (latest) last."""
    try:
        with open("/proc/self/mountinfo") as f:
            return [_unescape(line.split()[4]) for line in f]
    except OSError:
        return []


def _unescape(field: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 4 <= len(field) and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def unmount_below(path: str) -> int:
    """Lazily unmount everything mounted at or below ``path`` (deepest first, stacked mounts included). Returns how
    many mounts were detached."""
    root = os.path.abspath(path).rstrip("/") or "/"
    detached = 0
    for _ in range(64):  # stacked mounts reappear one by one; a bound keeps a broken /proc from spinning
        inside = [p for p in mount_points() if p == root or p.startswith(root + "/")]
        if not inside:
            break
        progress = False
        for point in sorted(set(inside), key=len, reverse=True):
            if _LIBC.umount2(point.encode(), MNT_DETACH) == 0:
                detached += 1
                progress = True
        if not progress:
            break
    return detached


def remove_tree(path: str) -> dict:
    """Remove ``path`` and everything below it (see the module docstring). Never raises for what is inside; returns
    {"removed": entries removed, "unmounted": mounts detached, "left": True if ``path`` still exists, "error": the
    first error that kept something}."""
    report: dict[str, Any] = {"removed": 0, "unmounted": 0, "left": False, "error": None}
    path = os.path.abspath(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return report
    except OSError as exc:
        report.update(left=True, error=str(exc))
        return report
    report["unmounted"] = unmount_below(path)
    parent, name = os.path.split(path)
    if not stat.S_ISDIR(info.st_mode):
        try:
            os.unlink(path)
            report["removed"] += 1
        except OSError as exc:
            report["error"] = str(exc)
    else:
        try:
            parent_fd = os.open(parent or "/", _DIR_FLAGS)
        except OSError as exc:
            report.update(left=True, error=str(exc))
            return report
        try:
            _remove_dir_at(parent_fd, name, report)
        finally:
            os.close(parent_fd)
    report["left"] = os.path.lexists(path)
    return report


def _open_dir(parent_fd: int, name: str) -> int | None:
    """Open ``name`` under ``parent_fd`` as a directory (never through a link), making it readable and searchable
    first if its mode (000) forbids it."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except PermissionError:
        try:
            os.chmod(name, 0o700, dir_fd=parent_fd, follow_symlinks=False)
            return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
        except OSError:
            return None
    except OSError:
        return None


def _remove_dir_at(top_parent_fd: int, top_name: str, report: dict) -> None:
    """The iterative walk: one open descriptor (the current directory) and a stack of (name, device, inode) from the
    top down; going up is ``..`` checked against the recorded identity, so the depth costs memory, not descriptors
    or recursion. A directory is removed from its parent once empty."""
    fd = _open_dir(top_parent_fd, top_name)
    if fd is None:
        _rmdir(top_parent_fd, top_name, report)
        return
    stack: list[tuple[str, int, int]] = [(top_name, *_identity(fd))]
    aside: set[str] = set()
    try:
        while True:
            child = _first_subdir_after_clearing(fd, report, aside)
            if child is not None:
                child_fd = _open_dir(fd, child)
                if child_fd is not None:
                    os.close(fd)
                    fd = child_fd
                    stack.append((child, *_identity(fd)))
                    continue
                # Cannot enter it (a mount we could not detach, a race): remove it as it stands, or set it aside.
                if not _rmdir(fd, child, report):
                    _rename_aside(fd, child, aside)
                continue
            done = stack.pop()[0]
            if not stack:
                os.close(fd)
                fd = None
                _rmdir(top_parent_fd, done, report)
                return
            up = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = up
            if _identity(fd) != stack[-1][1:]:
                _note(report, "a directory moved during the removal")
                return
            if not _rmdir(fd, done, report):
                _rename_aside(fd, done, aside)
    except OSError as exc:
        _note(report, str(exc))
    finally:
        if fd is not None:
            os.close(fd)


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def _first_subdir_after_clearing(fd: int, report: dict, aside: set) -> str | None:
    """Unlink every non-directory in ``fd``'s directory; return the name of one subdirectory left, or None."""
    try:
        os.fchmod(fd, 0o700)  # a writable parent is what unlinking needs
    except OSError:
        pass
    subdir = None
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                if entry.name in aside:
                    continue
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if is_dir:
                    if subdir is None:
                        subdir = entry.name
                    continue
                try:
                    os.unlink(entry.name, dir_fd=fd)
                    report["removed"] += 1
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    _note(report, f"{entry.name!r}: {exc}")
    except OSError as exc:
        _note(report, str(exc))
    return subdir


def _rmdir(parent_fd: int, name: str, report: dict) -> bool:
    try:
        os.rmdir(name, dir_fd=parent_fd)
        report["removed"] += 1
        return True
    except FileNotFoundError:
        return True
    except OSError as exc:
        if exc.errno == errno.EBUSY:  # mounted on after our unmount pass: detach it and try once more
            if _LIBC.umount2(f"/proc/self/fd/{parent_fd}/{name}".encode(), MNT_DETACH) == 0:
                try:
                    os.rmdir(name, dir_fd=parent_fd)
                    report["removed"] += 1
                    return True
                except OSError:
                    pass
        _note(report, f"{name!r}: {exc}")
        return False


def _rename_aside(parent_fd: int, name: str, aside: set) -> None:
    """A directory that cannot be removed is renamed (or at least remembered) so the walk does not pick it again; the
    report says the tree was left."""
    new = f".pkb-unremovable-{len(aside)}"
    try:
        os.rename(name, new, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
        aside.add(new)
    except OSError:
        aside.add(name)


def _note(report: dict, message: str) -> None:
    if report["error"] is None:
        report["error"] = message
