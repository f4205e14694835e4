"""Shared-device worlds, inside a rank: every rank of a group (and of the other group) on one GPU.

The judge starts a shared world (``pkb eval ... --shared-device``, evaluator/judge/shared_device.py) by narrowing the
ranks' ``CUDA_VISIBLE_DEVICES`` to one GPU; it refuses a CUDA world with fewer GPUs than ranks otherwise, so a CUDA
rank that sees fewer devices than its world has ranks is in a shared world (:func:`is_shared`). There NCCL cannot run
(it refuses two ranks of one communicator on one GPU), so the rank:

- joins a gloo process group and installs evaluator/rank/gloo_compat.py with staging, which moves every collective
  and point-to-point call on CUDA tensors through host memory, with NCCL's results;
- allows torch's symmetric memory to rendezvous ranks on one device (``TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES=1``,
  what torch's own tests use); NVLink multicast stays off (evaluator/process/environment.py sets it for every rank);
- bounds its device memory to its share of the GPU (:func:`memory_fraction`), so that one rank cannot take the
  memory its peers and the other group need, and a rank that runs out is told so in terms of the shared world
  (:func:`out_of_memory_message`): the bound is the shared world's, not a fault of the candidate's logic;
- likewise a kernel that addresses ``cuda:{rank}`` (one GPU per rank, as on the real hosts) finds no such device
  here (:func:`another_device_message`).
Both are failures of kind ``shared_world_limit`` (LIMIT_KIND): the judge turns a candidate's into ``unverified`` (not
correct, not ranked, not retried; its message says why), never into infra_error, which the candidate could otherwise
claim at will to buy retries; a reference's is the platform's infra_error as any reference failure is.
"""

from __future__ import annotations

import os

# What a CUDA context, the caching allocator's slack and the process group's buffers take per process, outside the
# allocator's fraction (a context alone is ~0.5 GiB on an H100/H200): kept free for each of the 2W processes.
CONTEXT_RESERVE_BYTES = 1 << 30
# Never bound a rank below this share of the device, whatever W (a world too wide for its GPU then runs out of
# memory, said so, rather than every rank starting with a useless sliver).
MIN_FRACTION = 0.01
OVERLAP_ENV = "TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES"
# The failure kind of a rank that hit the shared world's own limits (evaluator/judge/pair.py: unverified).
LIMIT_KIND = "shared_world_limit"


def is_shared(device_count: int, world_size: int) -> bool:
    """Whether a CUDA rank of a ``world_size`` world that sees ``device_count`` GPUs shares one with its peers."""
    return 0 < device_count < world_size


def memory_fraction(total_bytes: int, world_size: int) -> float:
    """Each rank's share of a ``total_bytes`` device that 2W processes (both groups' W ranks) share: what is left
    after every process's context reserve, split evenly."""
    processes = 2 * max(1, world_size)
    usable = total_bytes - processes * CONTEXT_RESERVE_BYTES
    return max(MIN_FRACTION, min(1.0, usable / processes / total_bytes))


def set_up(device, total_bytes: int, world_size: int) -> dict:
    """Before the process group and any candidate code: symmetric memory may overlap devices, and this process's
    allocator is bounded to its share. Returns what was set (the rank reports it with its environment)."""
    import torch

    os.environ[OVERLAP_ENV] = "1"
    fraction = memory_fraction(total_bytes, world_size)
    torch.cuda.set_per_process_memory_fraction(fraction, device)
    return {
        "shared_device": True,
        "ranks_per_device": 2 * world_size,
        "memory_fraction": round(fraction, 4),
        "memory_bound_bytes": int(fraction * total_bytes),
    }


def _chain(exc: BaseException | None):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def is_another_device(exc: BaseException) -> bool:
    """A CUDA device index this rank does not have: a kernel written for one GPU per rank (``cuda:{rank}``,
    ``set_device(LOCAL_RANK)``) in a world where every rank has one, ``cuda:0``."""
    return any("invalid device ordinal" in str(e).lower() for e in _chain(exc))


def another_device_message(world_size: int) -> str:
    return (
        f"the candidate asked for a GPU other than cuda:0, and in a shared-device world all {world_size} ranks "
        f"share one GPU, cuda:0 (LOCAL_RANK still counts ranks). This says nothing about the candidate's "
        f"correctness: a kernel that takes its device from its inputs or torch.cuda.current_device() runs here, "
        f"and one GPU per rank runs this one"
    )


def is_out_of_memory(exc: BaseException) -> bool:
    """A CUDA allocation that failed: torch's OutOfMemoryError, or a CUDA error saying so (an allocation outside the
    caching allocator: a Triton or extension kernel's own)."""
    import torch

    return any(isinstance(e, torch.OutOfMemoryError) or "out of memory" in str(e).lower() for e in _chain(exc))


def out_of_memory_message(world_size: int, bound_bytes: int | None, total_bytes: int | None) -> str:
    gib = 2**30
    share = f"{bound_bytes / gib:.1f} GiB of {total_bytes / gib:.1f} GiB" if bound_bytes and total_bytes else "a share"
    return (
        f"the shared-device world ran out of device memory: {2 * world_size} rank processes (W = {world_size}, "
        f"reference and candidate) share one GPU, each bounded to {share}. This says nothing about the "
        f"candidate's correctness; judge it on a host with a GPU per rank, or at smaller shapes"
    )
