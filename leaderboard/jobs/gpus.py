"""A worker's GPUs: the set it is started for (``PKB_GPUS=0-3``, or ``runserver_with_worker --gpus 0-3``), which
becomes ``CUDA_VISIBLE_DEVICES`` for every judge it starts, and one lock per GPU so that no two workers of a host
ever run jobs on the same one.

An 8-GPU host runs one worker on 0-7 for a W = 8 profile, two on 0-3 and 4-7 for W = 4, or eight on 0 ... 7 for
W = 1. The locks are exclusive ``flock``s on ``PKB_GPU_LOCK_DIR/<index>.lock``, held while the worker runs; the
kernel drops them when its process dies, however it dies, so a killed worker never leaves a GPU taken. Workers in
separate containers must share that directory (a bind mount) for the locks to see each other.

An unpinned worker (``PKB_GPUS`` empty: a CPU worker, or a GPU host's only worker) takes no lock and leaves
``CUDA_VISIBLE_DEVICES`` as its environment has it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
from pathlib import Path

from django.conf import settings
from dramatiq.middleware import MiddlewareError

from evaluator.contract import schema


# Both are MiddlewareErrors: dramatiq's before_worker_boot logs any other exception and boots the worker anyway.
class BadGpuSet(ValueError, MiddlewareError):
    """A ``PKB_GPUS`` / ``--gpus`` value that is not a set of device indexes."""


class GpusTaken(RuntimeError, MiddlewareError):
    """Another live worker holds one of this worker's GPUs: it refuses to start rather than share it."""


def parse(spec: str) -> list[int]:
    """``"0-3"`` -> [0, 1, 2, 3], ``"0,2,4-5"`` -> [0, 2, 4, 5], ``""`` -> [] (unpinned): the judge's own syntax
    (evaluator/contract/requests.py, device_set)."""
    if not (spec or "").strip():
        return []
    try:
        return schema.device_set(spec)
    except schema.BadDeviceSet as exc:
        raise BadGpuSet(f"PKB_GPUS: {exc}") from None


def configured() -> list[int]:
    """This worker's GPUs ([] when it is not pinned)."""
    return parse(settings.PKB_GPUS)


def spec() -> str:
    """This worker's GPUs as ``CUDA_VISIBLE_DEVICES`` and the judge's ``--gpus`` read them ("" when unpinned)."""
    return ",".join(map(str, configured()))


def pin(env: dict) -> dict:
    """A judge's environment, narrowed to this worker's GPUs when it is pinned (unchanged otherwise)."""
    visible = spec()
    if visible:
        env["CUDA_VISIBLE_DEVICES"] = visible
        # nvidia-smi (the locks, the host record) numbers GPUs in PCI bus order; CUDA's default order is fastest
        # first, which on a host of mixed GPUs would put another card behind the same index.
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    return env


class GpuLocks:
    """The exclusive locks of one worker's GPUs; ``release()`` (or the process's death) frees them."""

    def __init__(self, devices: list[int], fds: list[int]):
        self.devices, self._fds = devices, fds

    def release(self) -> None:
        for fd in self._fds:
            os.close(fd)  # closing the last descriptor drops the flock
        self._fds = []

    @property
    def held(self) -> bool:
        return bool(self._fds)


def _holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return os.read(fd, 200).decode("utf-8", "replace").strip() or "unknown (still starting)"
    except OSError:
        return "unknown"


def claim(devices: list[int], lock_dir) -> GpuLocks:
    """Take every GPU of ``devices`` or none: GpusTaken names the first one another worker holds, and that worker."""
    directory = Path(lock_dir)
    directory.mkdir(parents=True, exist_ok=True)
    fds: list[int] = []
    try:
        for index in devices:
            path = directory / f"{index}.lock"
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                holder = _holder(fd)
                os.close(fd)
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                raise GpusTaken(
                    f"refusing to start: GPU {index} is held by another worker ({holder}; lock {path}); "
                    "two workers never share a GPU: start this one for GPUs no worker holds "
                    "(PKB_GPUS / --gpus)"
                ) from None
            fds.append(fd)
            os.ftruncate(fd, 0)
            os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
    except BaseException:
        GpuLocks(devices, fds).release()
        raise
    return GpuLocks(devices, fds)


def claim_configured() -> GpuLocks | None:
    """This worker's GPUs locked for as long as it runs (None when it is not pinned)."""
    devices = configured()
    return claim(devices, settings.PKB_GPU_LOCK_DIR) if devices else None
