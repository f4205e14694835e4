"""What a GPU worker's host is, and whether it can serve a profile: the record a worker takes when it starts for a set
of devices (``--gpus 0-3``, which becomes ``CUDA_VISIBLE_DEVICES`` for its judges), kept with every result it
produces, and the check that refuses a profile the devices do not match (too few GPUs, another model, GPUs not linked
by NVLink where the profile says NVLink).

Read from ``nvidia-smi`` (``PKB_NVIDIA_SMI`` names another binary: tests use a stand-in) and the installed
packages' metadata (torch's CUDA version from its version.py); nothing here initialises CUDA, so a worker can take its
record without holding a GPU.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from importlib import metadata
from typing import Any


def _smi(*args: str) -> str:
    binary = os.environ.get("PKB_NVIDIA_SMI", "nvidia-smi")
    try:
        done = subprocess.run([binary, *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _torch_cuda() -> str | None:
    """The CUDA version torch was built for, read from its version.py without importing torch (seconds, and the
    record must not touch a GPU); None for a CPU build or no torch."""
    try:
        text = metadata.distribution("torch").locate_file("torch/version.py").read_text()
    except (metadata.PackageNotFoundError, OSError):
        return None
    found = re.search(r"^cuda\s*(?::[^=\n]*)?=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    return found.group(1) if found else None


def _links(topology: str, devices: list[int]) -> dict:
    """From ``nvidia-smi topo -m``: the link between each pair of ``devices`` (``NV18``, ``PIX``, ``SYS``...)."""
    rows = {}
    header: list[str] = []
    # nvidia-smi underlines the header row with terminal escapes even when its output is not a terminal.
    topology = re.sub(r"\x1b\[[0-9;]*m", "", topology)
    for line in topology.splitlines():
        cells = line.split()
        if not cells:
            continue
        if not header and cells[0].startswith("GPU0"):
            header = [c for c in cells if c.startswith("GPU")]
            continue
        if header and cells[0].startswith("GPU") and cells[0][3:].isdigit():
            rows[int(cells[0][3:])] = cells[1 : 1 + len(header)]
    links = {}
    for i in devices:
        for j in devices:
            if i < j and i in rows and j < len(rows[i]):
                links[f"{i}-{j}"] = rows[i][j]
    return links


def record(devices: list[int] | None = None) -> dict:
    """The host as a worker for ``devices`` (all GPUs when None) sees it."""
    gpus: list[dict[str, Any]] = []
    for line in _smi("--query-gpu=index,name,uuid,driver_version,memory.total", "--format=csv,noheader").splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) >= 5 and cells[0].isdigit():
            gpus.append(
                {"index": int(cells[0]), "name": cells[1], "uuid": cells[2], "driver": cells[3], "memory": cells[4]}
            )
    chosen = [g for g in gpus if devices is None or g["index"] in devices]
    indexes = [g["index"] for g in chosen]
    return {
        "host": platform.node(),
        "python": platform.python_version(),
        "torch": _version("torch"),
        "triton": _version("triton"),
        "cuda": _torch_cuda(),
        "driver": chosen[0]["driver"] if chosen else None,
        "devices": devices,
        "visible": ",".join(map(str, indexes)),
        "gpus": chosen,
        "missing": sorted(set(devices or []) - set(indexes)),
        "links": _links(_smi("topo", "-m"), indexes) if len(indexes) > 1 else {},
    }


def mismatch(
    host: dict, world_size: int, gpu_model: str | None = None, nvlink: bool = False, shared_device: bool = False
) -> str | None:
    """Why ``host`` cannot serve a profile of ``world_size`` ranks on ``gpu_model`` GPUs (linked by NVLink when
    ``nvlink``), or None. A ``shared_device`` profile runs every rank on one GPU (pkb eval --shared-device): one GPU
    of the right model serves it, and no link between GPUs matters."""
    gpus = host.get("gpus") or []
    if host.get("missing"):
        return f"the worker's devices {host['missing']} are not on this host"
    if shared_device:
        if not gpus:
            return f"the profile runs its {world_size} ranks on one shared GPU, and this worker has none"
        gpus, nvlink = gpus[:1], False  # the ranks run on the first GPU of the worker's set
    elif len(gpus) < world_size:
        return f"the profile runs {world_size} ranks, one GPU each, and this worker has {len(gpus)}"
    if gpu_model:
        other = sorted({g["name"] for g in gpus if gpu_model.lower() not in g["name"].lower()})
        if other:
            return f"the profile is for {gpu_model} GPUs, and this worker has {', '.join(other)}"
    if nvlink and world_size > 1:
        loose = sorted(pair for pair, link in (host.get("links") or {}).items() if not link.startswith("NV"))
        if loose or len(host.get("links") or {}) < world_size * (world_size - 1) // 2:
            return "the profile needs its GPUs linked by NVLink, and these pairs are not: " + (
                ", ".join(f"{p} ({host['links'][p]})" for p in loose) or "unknown (no topology)"
            )
    return None
