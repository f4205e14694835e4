"""Problem 45 in Triton: the RMSNorm of the reduce-scattered chunk as one program per row (the row in fp32, mean of
squares, rsqrt, times gamma, rounded once to the input dtype). At W = 1 the reduce-scatter is the identity and the
division by W leaves the values as they are, so the kernel reads the input directly; with more ranks NCCL
reduce-scatters and the chunk is divided by W in the input dtype first, as the reference does."""

import torch
import torch.distributed as dist
import triton
import triton.language as tl


@triton.jit
def _rms_rows(x_ptr, gamma_ptr, out_ptr, hidden, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < hidden
    x = tl.load(x_ptr + row * hidden + cols, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(gamma_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(x * x, axis=0) / hidden
    y = x * tl.rsqrt(mean_sq + eps) * g
    tl.store(out_ptr + row * hidden + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def solution(rs_input_1d: torch.Tensor, gamma: torch.Tensor, eps: float) -> torch.Tensor:
    world = dist.get_world_size()
    if world == 1:
        chunk = rs_input_1d.contiguous()
    else:
        chunk = torch.empty(rs_input_1d.numel() // world, dtype=rs_input_1d.dtype, device=rs_input_1d.device)
        dist.reduce_scatter_tensor(chunk, rs_input_1d.contiguous(), op=dist.ReduceOp.SUM)
        chunk.div_(world)
    hidden = gamma.numel()
    rows = chunk.numel() // hidden
    out = torch.empty(rows * hidden, dtype=rs_input_1d.dtype, device=chunk.device)
    if rows:
        _rms_rows[(rows,)](
            chunk, gamma.contiguous(), out, hidden, eps, BLOCK=triton.next_power_of_2(hidden), num_warps=4
        )
    return out.view(rows, hidden)
