"""A rank joining its world: its device and its process group. On CUDA, one GPU per rank and NCCL; or, in a world of
more ranks than visible GPUs, every rank on one shared GPU (evaluator/rank/shared_device.py) and gloo, collectives on
CUDA tensors staged through host memory. On CPU, gloo with the collective forms NCCL has and gloo lacks
(evaluator/rank/gloo_compat.py)."""

from __future__ import annotations

import datetime

import torch
import torch.distributed as dist

from evaluator.rank import shared_device


def join(
    rank: int, world_size: int, device_kind: str, timeout_s: float
) -> tuple[torch.device, str, int | None, dict | None]:
    """Take this rank's device and start its process group. Returns the device, the backend, the device's size in
    bytes (None on CPU) and, in a shared-device world, its set-up (shared_device.set_up; else None). Raises what
    failed: the harness's failure, never the candidate's (no candidate code has run yet)."""
    timeout = datetime.timedelta(seconds=timeout_s)
    if device_kind != "cuda":
        device = torch.device("cpu")
        dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=timeout)
        from evaluator.rank import gloo_compat  # NCCL's collective forms that gloo lacks (the CPU profile)

        gloo_compat.install()
        return device, "gloo", None, None
    count = torch.cuda.device_count()
    if count == 0:
        raise RuntimeError("no CUDA device is visible to this rank")
    local = rank % count
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    total = torch.cuda.get_device_properties(device).total_memory  # before any candidate code
    if not shared_device.is_shared(count, world_size):
        dist.init_process_group("nccl", rank=rank, world_size=world_size, timeout=timeout, device_id=device)
        return device, "nccl", total, None
    shared = shared_device.set_up(device, total, world_size)  # every rank on this GPU: gloo, staged
    dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=timeout)
    from evaluator.rank import gloo_compat

    gloo_compat.install(stage=True)
    return device, "gloo", total, shared
