"""Problem 8 in Triton: at W=1 the all-to-all is the identity, so one Triton copy; otherwise NCCL's all-to-all."""

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
    if dist.get_world_size() == 1:
        n = tensor.numel()
        _copy[(triton.cdiv(n, 8192),)](tensor, out, n, BLOCK=8192, num_warps=8)
    else:
        dist.all_to_all_single(out, tensor.contiguous())
    return out
