"""Compile once: one build directory per candidate group, and a judge-owned cache of builds across jobs.

Inside a job, every rank of the candidate group shares the group's build directory (``TORCH_EXTENSIONS_DIR`` and
``TRITON_CACHE_DIR`` point into it, and ``compile_cuda_extension`` serialises its builds there with a lock), so at
W = 8 the first rank compiles and the other seven load the same module instead of compiling it seven more times.

Across jobs, after a candidate group ends, the judge copies what it built (regular files only, bounded in size) into
a cache it owns, under a key made of the candidate file's bytes and the toolchain (torch, CUDA, Python). The next job
of the same file starts with that build in its directory: ``compile_cuda_extension`` finds its fingerprint and loads
the module without compiling; Triton finds its own cache. Entries are keyed by the candidate file, so whatever a
candidate leaves in its build directory can only ever be handed back to that same file's later jobs, never to
another submission. The cache is never readable by candidates: its contents are copied into their directory.

``PKB_BUILD_CACHE`` names the cache (default ``~/.cache/pkb-arena/builds``; ``off`` switches it off);
``PKB_BUILD_CACHE_BYTES`` and ``PKB_BUILD_CACHE_FILES`` bound it in bytes and in files (default 20 GiB and 200,000
files; the oldest entries go first); one entry holds at most ENTRY_LIMIT_BYTES and ENTRY_LIMIT_FILES (a build
directory of 100,000 empty files is not kept).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import time

ENTRY_LIMIT_BYTES = 2 * 2**30  # one job's builds; a larger build directory is not kept
ENTRY_LIMIT_FILES = 10_000  # nor one of more files (a torch extension's build is tens, a Triton cache hundreds)
CACHE_FILES = 200_000
LOG_NAME = "builds.log"  # one JSON line per compile_cuda_extension call (utils/cuda_helpers.py)
LOG_LIMIT_BYTES = 256 * 1024


def cache_root() -> str | None:
    value = os.environ.get("PKB_BUILD_CACHE", "")
    if value.lower() in ("off", "0", "none"):
        return None
    return value or os.path.join(os.path.expanduser("~"), ".cache", "pkb-arena", "builds")


def key(candidate_path: str, device: str) -> str | None:
    """The cache key of a candidate file on this toolchain, or None (no file, e.g. "reference")."""
    try:
        with open(candidate_path, "rb") as f:
            digest = hashlib.sha256(f.read())
    except OSError:
        return None
    import torch

    toolchain = f"{torch.__version__}|{torch.version.cuda}|{sys.version_info[:3]}|{device}"
    digest.update(b"\0" + toolchain.encode())
    return digest.hexdigest()


def restore(entry_key: str | None, build_dir: str, uid: int | None) -> bool:
    """Copy a cached build into the group's (empty) build directory, owned by the candidate's uid. True on a hit."""
    root = cache_root()
    if not entry_key or root is None:
        return False
    entry = os.path.join(root, entry_key)
    if not os.path.isdir(entry):
        return False
    _copy_plain(entry, build_dir, limit=ENTRY_LIMIT_BYTES, uid=uid)
    now = time.time()
    try:
        os.utime(entry, (now, now))  # recently used: evicted last
    except OSError:
        pass
    return True


def harvest(entry_key: str | None, build_dir: str) -> bool:
    """Keep what the group built (when it built anything and the cache has no entry yet). True if kept."""
    root = cache_root()
    if not entry_key or root is None or not _has_build(build_dir):
        return False
    entry = os.path.join(root, entry_key)
    if os.path.isdir(entry):
        return False
    os.makedirs(root, mode=0o700, exist_ok=True)
    staging: str | None  # None once renamed into the cache: nothing left to remove
    staging = tempfile.mkdtemp(prefix=".incoming-", dir=root)
    try:
        if not _copy_plain(
            build_dir, staging, limit=ENTRY_LIMIT_BYTES, uid=None, skip=(LOG_NAME,), limit_files=ENTRY_LIMIT_FILES
        ):
            return False
        os.rename(staging, entry)
        staging = None
    except OSError:
        return False
    finally:
        if staging:
            shutil.rmtree(staging, ignore_errors=True)
    _evict(
        root,
        int(os.environ.get("PKB_BUILD_CACHE_BYTES", 20 * 2**30)),
        int(os.environ.get("PKB_BUILD_CACHE_FILES", CACHE_FILES)),
    )
    return True


def report(build_dir: str) -> dict:
    """What the candidate's ranks said about their builds (informational: written by the candidate's processes)."""
    path = os.path.join(build_dir, LOG_NAME)
    compiled, loaded, failed, seconds = 0, 0, 0, 0.0
    fingerprints: set = set()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            data = f.read(LOG_LIMIT_BYTES)
    except OSError:
        data = b""
    for line in data.splitlines():
        try:
            entry = json.loads(line)
            fingerprints.add(f"{str(entry.get('fingerprint', ''))[:16]} arch={str(entry.get('arch', ''))[:32]}")
            if entry.get("failed"):
                failed += 1
            if entry.get("compiled"):
                compiled += 1
                seconds += max(0.0, min(float(entry.get("seconds", 0.0)), 86400.0))
            elif not entry.get("failed"):
                loaded += 1
        except (ValueError, TypeError, AttributeError):
            continue
    return {
        "compiled": compiled,
        "loaded_built": loaded,
        "failed": failed,
        "compile_s": round(seconds, 3),
        "fingerprints": sorted(fingerprints)[:8],
    }


def _has_build(build_dir: str) -> bool:
    for _root, _dirs, files in os.walk(build_dir):
        if any(f.endswith(".so") or f.endswith(".cubin") for f in files):
            return True
    return False


def _copy_plain(src: str, dst: str, limit: int, uid: int | None, skip=(), limit_files: int = ENTRY_LIMIT_FILES) -> bool:
    """Copy regular files and directories only (no links, devices or fifos), at most ``limit`` bytes and
    ``limit_files`` files and directories. False when the tree is over a limit (nothing is promised about what was
    copied then)."""
    total = 0
    count = 0
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        target_root = dst if rel == "." else os.path.join(dst, rel)
        os.makedirs(target_root, exist_ok=True)
        if uid is not None:
            os.chown(target_root, uid, uid)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
        count += len(dirs) + len(files)
        if count > limit_files:
            return False
        for name in files:
            if name in skip and rel == ".":
                continue
            path = os.path.join(root, name)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            with os.fdopen(fd, "rb") as f:
                info = os.fstat(f.fileno())
                if not (info.st_mode & 0o170000) == 0o100000:  # regular files only
                    continue
                total += info.st_size
                if total > limit:
                    return False
                target = os.path.join(target_root, name)
                with open(target, "wb") as out:
                    shutil.copyfileobj(f, out)
                os.chmod(target, 0o755 if info.st_mode & 0o111 else 0o644)
                if uid is not None:
                    os.chown(target, uid, uid)
    return True


def _evict(root: str, limit: int, limit_files: int = CACHE_FILES) -> None:
    """Remove the oldest entries (by last use) until the cache holds at most ``limit`` bytes and ``limit_files``
    files and directories."""
    entries = []
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if name.startswith(".") or not os.path.isdir(path):
            continue
        size, count = 0, 0
        for r, dirs, files in os.walk(path):
            count += len(dirs) + len(files)
            size += sum(os.path.getsize(os.path.join(r, f)) for f in files)
        entries.append((os.path.getmtime(path), size, count, path))
    total = sum(e[1] for e in entries)
    total_files = sum(e[2] for e in entries)
    for _mtime, size, count, path in sorted(entries):
        if total <= limit and total_files <= limit_files:
            break
        shutil.rmtree(path, ignore_errors=True)
        total -= size
        total_files -= count
