"""Problem 3 in Triton: the out-of-place broadcast's copy is one Triton kernel (8192 elements per program); at W = 1
the copy is the broadcast, and with more ranks NCCL broadcasts rank src's copy into every rank's."""

import torch
import torch.distributed as dist
import triton
import triton.language as tl

BLOCK = 8192


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


def solution(tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
    source = tensor.contiguous()
    out = torch.empty_like(source)
    n = source.numel()
    if n:
        _copy[(triton.cdiv(n, BLOCK),)](source, out, n, BLOCK=BLOCK, num_warps=8)
    if dist.get_world_size() > 1:
        dist.broadcast(out, src=src)
    return out
