"""Problem 44 in Triton: one program per quantization block. It loads the block (zero padding past the end, as the
reference pads), takes amax in fp32, scale = max(amax, 1e-8) / 127, rounds x / scale to the nearest integer (ties to
even, libdevice's rint, as torch.round), clamps to [-127, 127] and writes q * scale: the int8 round trip without
materialising the int8 tensor. At W = 1 the average over one rank is that value, stored straight in the input
dtype; with more ranks the fp32 values are all-reduced and divided by W first, as the reference does."""

import torch
import torch.distributed as dist
import triton
import triton.language as tl

try:  # the libdevice wrapper moved between Triton releases
    from triton.language.extra import libdevice
except ImportError:  # pragma: no cover - older Triton
    from triton.language.extra.cuda import libdevice


@triton.jit
def _quant_dequant(x_ptr, out_ptr, n, block_size, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * block_size
    lanes = tl.arange(0, BLOCK)
    offsets = start + lanes
    mask = (lanes < block_size) & (offsets < n)
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    amax = tl.max(tl.abs(x), axis=0)
    scale = tl.where(amax > 1e-8, amax, 1e-8) / 127.0
    q = libdevice.rint(x / scale)
    q = tl.where(q > 127.0, 127.0, tl.where(q < -127.0, -127.0, q))
    tl.store(out_ptr + offsets, (q * scale).to(out_ptr.dtype.element_ty), mask=mask)


def solution(flat_grad: torch.Tensor, block_size: int) -> torch.Tensor:
    x = flat_grad.reshape(-1).contiguous()
    n = x.numel()
    world = dist.get_world_size()
    out = torch.empty(n, dtype=flat_grad.dtype if world == 1 else torch.float32, device=x.device)
    if n:
        grid = (triton.cdiv(n, block_size),)
        _quant_dequant[grid](x, out, n, block_size, BLOCK=triton.next_power_of_2(block_size), num_warps=4)
    if world > 1:
        dist.all_reduce(out, op=dist.ReduceOp.SUM)
        out /= world
        out = out.to(flat_grad.dtype)
    return out.reshape(flat_grad.shape)
