"""How big a box may grow: its memory, its processes, its scratch bytes and files, its cores. Each limit is a number
the kernel enforces for the whole box (evaluator/process/cgroups.py, boxes.py), sized here from the host and the
operator's settings, so one box can neither take the host nor starve the boxes beside it.
"""

from __future__ import annotations

import os

FILE_SIZE_LIMIT = 2 * 2**30  # one file a candidate writes (logs included)
PROCESS_LIMIT = 8192  # processes and threads of one box at most (its cgroup's pids.max and its uid's RLIMIT_NPROC)
RANK_MEMORY = 8 * 2**30  # host memory a rank may take by default: torch, a CUDA context, an nvcc build
TMPFS_MAX = (
    4 * 2**30
)  # the box's /tmp + /dev/shm (and its System V shared memory) at most; its memory limit bounds both
TMPFS_FILES = 65536  # inodes of the box's /tmp + /dev/shm
SCRATCH_MAX = 8 * 2**30  # the group's scratch (rank directories, outputs, builds) at most: a tmpfs of its own
SCRATCH_FILES = 65536  # inodes of the group's scratch: a build or a Triton cache needs hundreds, not 100,000
ALL_BOXES_PID_SHARE = 0.5  # every box together may hold at most this share of the host's pid_max


def size(text: str) -> int:
    """``4G``, ``512M``, ``123456`` (bytes)."""
    text = text.strip().upper().rstrip("B")
    scale = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}.get(text[-1:], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def host_memory() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 16 * 2**30


def memory_limit(world_size: int) -> int:
    """A box's memory limit: ``PKB_BOX_MEMORY`` (``24G``), else RANK_MEMORY a rank, within three quarters of the
    host's memory (the judge, the reference's ranks and the site need the rest)."""
    configured = os.environ.get("PKB_BOX_MEMORY")
    if configured:
        return size(configured)
    return min(int(host_memory() * 0.75), max(4 * 2**30, world_size * RANK_MEMORY))


def tmpfs_bytes(memory_bytes: int) -> int:
    return min(TMPFS_MAX, memory_bytes // 2)


def scratch_bytes(memory_bytes: int) -> int:
    """The group's scratch tmpfs: ``PKB_BOX_SCRATCH`` (``2G``), else half the box's memory up to SCRATCH_MAX. Its pages
    are charged to the box's memory limit too, so the two bound each other."""
    configured = os.environ.get("PKB_BOX_SCRATCH")
    if configured:
        return size(configured)
    return min(SCRATCH_MAX, memory_bytes // 2)


def scratch_files() -> int:
    configured = os.environ.get("PKB_BOX_SCRATCH_FILES")
    return int(configured) if configured else SCRATCH_FILES


def pid_max() -> int:
    """The host's process-id space: the smaller of kernel.pid_max and kernel.threads-max."""
    found = []
    for name in ("/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"):
        try:
            with open(name) as f:
                found.append(int(f.read().strip()))
        except (OSError, ValueError):
            pass
    return min(found) if found else 32768


def all_boxes_pids() -> int:
    """The pids.max of the boxes' parent group: all boxes together stay under half the host's ids, so the judge, the
    references and the site always have room to start a process."""
    return max(1024, int(pid_max() * ALL_BOXES_PID_SHARE))


def box_pids() -> int:
    """One box's pids.max: PROCESS_LIMIT, or less on a host whose pid space is small (four boxes fill the parent's
    share at most)."""
    configured = os.environ.get("PKB_BOX_PIDS")
    if configured:
        return int(configured)
    return max(256, min(PROCESS_LIMIT, all_boxes_pids() // 4))


def box_cpus(allowed: set[int] | None = None) -> list[int]:
    """The cores a box may run on: the judge's own (the worker pins its judges to its share of the host; a candidate
    never widens past them). ``PKB_BOX_CPUS`` (``0-3,8``) narrows them further."""
    cpus = set(allowed if allowed is not None else os.sched_getaffinity(0))
    configured = os.environ.get("PKB_BOX_CPUS", "").strip()
    if configured and cpus & parse_cpu_list(configured):  # a setting outside the judge's cores narrows nothing
        cpus &= parse_cpu_list(configured)
    return sorted(cpus)


def parse_cpu_list(text: str) -> set[int]:
    """``0-3,8`` -> {0, 1, 2, 3, 8} (the kernel's cpuset list format)."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            low, high = part.split("-", 1)
            cpus.update(range(int(low), int(high) + 1))
        else:
            cpus.add(int(part))
    return cpus


def cpu_list(cpus: list[int]) -> str:
    """{0, 1, 2, 3, 8} -> ``0-3,8``."""
    parts, ordered = [], sorted(set(cpus))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)
