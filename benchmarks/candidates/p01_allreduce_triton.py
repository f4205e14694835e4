"""Problem 1 in Triton: the private copy is one vectorised Triton kernel; the sum is NCCL's (nothing to add at W=1)."""

import torch
import torch.distributed as dist
import triton
import triton.language as tl


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


def solution(tensor: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(tensor)
    n = tensor.numel()
    _copy[(triton.cdiv(n, 8192),)](tensor, out, n, BLOCK=8192, num_warps=8)
    if dist.get_world_size() > 1:
        dist.all_reduce(out)
    return out
