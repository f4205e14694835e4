"""Problem 20 in Triton: x[i] = fp32(y[i]) * fp32(s[i // block_size]) over the flattened (W, M, N) payload, 4096
elements per program (the scale gathered per element, cached in L1). At W = 1 the all-to-all keeps the one chunk
in place; with more ranks NCCL exchanges the dequantized chunks."""

import torch
import torch.distributed as dist
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _dequantize(y_ptr, s_ptr, out_ptr, n, block_size, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    s = tl.load(s_ptr + offsets // block_size, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, y * s, mask=mask)


def solution(local_y: torch.Tensor, local_s: torch.Tensor, block_size: int = 128) -> torch.Tensor:
    y = local_y.contiguous()
    s = local_s.contiguous()
    x = torch.empty(y.shape, dtype=torch.float32, device=y.device)
    n = y.numel()
    if n:
        _dequantize[(triton.cdiv(n, BLOCK),)](y, s, x, n, block_size, BLOCK=BLOCK, num_warps=8)
    if dist.get_world_size() == 1:
        return x
    out = torch.empty_like(x)
    dist.all_to_all_single(out, x)
    return out
