"""Problem 18 in Triton: one program per row sums the squares in fp32; the (M, 1) sums are all-reduced across the
ranks that share the hidden dimension (nothing to add at W = 1); a second program per row scales by
rsqrt(sum / (N * W) + eps), rounds to the input dtype and multiplies by the weight, rounding again (LlamaRMSNorm's
two roundings, as the reference). A row is one block of the next power of two of N lanes (N = 1024 by default)."""

import torch
import torch.distributed as dist
import triton
import triton.language as tl


@triton.jit
def _sum_squares(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * cols + offsets, mask=offsets < cols, other=0.0).to(tl.float32)
    tl.store(out_ptr + row, tl.sum(x * x, axis=0))


@triton.jit
def _scale(x_ptr, sumsq_ptr, w_ptr, out_ptr, cols, global_hidden, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    inv = tl.rsqrt(tl.load(sumsq_ptr + row) / global_hidden + eps)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=mask, other=0.0).to(tl.float32)
    y = (x * inv).to(out_ptr.dtype.element_ty).to(tl.float32)
    w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * cols + offsets, (w * y).to(out_ptr.dtype.element_ty), mask=mask)


def solution(local_hidden_states: torch.Tensor, local_weight: torch.Tensor, variance_epsilon: float) -> torch.Tensor:
    x = local_hidden_states.contiguous()
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    warps = 4 if block <= 2048 else 8
    sumsq = torch.empty(rows, 1, dtype=torch.float32, device=x.device)
    out = torch.empty_like(x)
    if rows == 0:
        return out
    _sum_squares[(rows,)](x, sumsq, cols, BLOCK=block, num_warps=warps)
    world = dist.get_world_size()
    if world > 1:
        dist.all_reduce(sumsq, op=dist.ReduceOp.SUM)
    _scale[(rows,)](
        x,
        sumsq,
        local_weight.to(x.dtype).contiguous(),
        out,
        cols,
        float(cols * world),
        float(variance_epsilon),
        BLOCK=block,
        num_warps=warps,
    )
    return out
