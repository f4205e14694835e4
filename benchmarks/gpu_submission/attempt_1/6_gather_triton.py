"""Problem 6 in Triton: rank dst's stacked (W, M, N) result. At W = 1 it is this rank's tensor under a new leading
dimension, written by one Triton copy kernel; with more ranks NCCL gathers the slots into rank dst's stack and a
non-root returns its input itself, as the reference does."""

import torch
import torch.distributed as dist
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


def solution(tensor: torch.Tensor, dst: int = 0) -> torch.Tensor:
    world = dist.get_world_size()
    if world > 1:
        if dist.get_rank() != dst:
            dist.gather(tensor, None, dst=dst)
            return tensor
        slots = [torch.empty_like(tensor) for _ in range(world)]
        dist.gather(tensor, slots, dst=dst)
        return torch.stack(slots)
    source = tensor.contiguous()
    out = torch.empty((1, *source.shape), dtype=source.dtype, device=source.device)
    n = source.numel()
    if n:
        _copy[(triton.cdiv(n, BLOCK),)](source, out, n, BLOCK=BLOCK, num_warps=4)
    return out
