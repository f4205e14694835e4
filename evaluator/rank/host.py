"""A rank's host: what it reports of it (``environment``: GPUs, driver, versions) and the cores it runs on."""

from __future__ import annotations

import os
from typing import Any

import torch


def _driver_version():
    """The kernel driver's version from /proc (instant), else nvidia-smi (a subprocess: ~0.5 s of a rank's start)."""
    try:
        with open("/proc/driver/nvidia/version") as f:
            words = f.readline().split()
        return next(w for w in words if w[0].isdigit() and w.count(".") >= 1)
    except Exception:  # noqa: BLE001 - not there in containers without /proc/driver: ask the tool
        pass
    try:
        import subprocess

        return (
            subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=20,
            )
            .stdout.split("\n")[0]
            .strip()
            or None
        )
    except Exception:  # noqa: BLE001 - informative only
        return None


def environment(backend: str) -> dict:
    import platform
    import socket

    env: dict[str, Any] = {
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "backend": backend,
        "gpus": [],
        "driver": None,
        "cuda": torch.version.cuda,
        "nccl": None,
        "triton": None,
    }
    if torch.cuda.is_available():
        env["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        try:
            env["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
        except Exception:  # noqa: BLE001 - informative only
            pass
        env["driver"] = _driver_version()
    try:
        # The installed version, without importing triton (an import costs a rank's start ~0.5 s for one string).
        from importlib import metadata

        env["triton"] = metadata.version("triton")
    except Exception:  # noqa: BLE001 - informative only
        pass
    return env


def pin_to_cores(rank: int, world_size: int) -> None:
    """Rank r of every role runs on the same cores, so reference and candidate ranks see the same CPU speed."""
    if not hasattr(os, "sched_setaffinity"):
        return
    cpus = sorted(os.sched_getaffinity(0))
    per_rank = max(1, len(cpus) // max(1, world_size))
    start = (rank * per_rank) % len(cpus)
    try:
        os.sched_setaffinity(0, cpus[start : start + per_rank])
    except OSError:
        pass
