"""44 quantized_grad_allreduce: block-wise int8 quantize / dequantize of a gradient, then fp32 all-reduce mean.

Interface as PKB: ``solution(flat_grad (n,), block_size) -> (n,)`` with n = max(M*N, 64*W) and block_size =
min(128, max(16, N // 4)), bf16, identical on every rank. Zero-pad to a multiple of block_size; per block scale =
max|x| (bf16, then fp32) clamped at 1e-8, / 127; q = round-half-even(x / scale) clamped to [-127, 127] as int8;
dequantize q * scale (fp32), drop the padding, all_reduce SUM in fp32, divide by W in fp32, cast to bf16.

Decisions (spec Pitfalls): on standard-normal gradients the quantization error (<= max|x| / 254 ~ 0.014) is below
atol, so PKB's check cannot tell quantized from plain averaging, and if it could, rounding-boundary flips between
x / (amax / 127) and x * (127 / amax) would fail correct kernels. We draw gradients whose quantization is exact
arithmetic yet visible: each block holds one element of magnitude exactly 127 * 2^-e (e in {3, 4, 5} per block,
random sign and position) and standard normals clipped to 95 % of it, so every block's scale is exactly 2^-e,
x / scale is exact in any formulation, the quantization error is up to 2^-(e+1) (0.06 at e = 3), and values with
x / scale exactly at k + 1/2 are moved one bf16 ulp toward zero, so no tie depends on the rounding mode. The
dequantized values are multiples of 2^-5 below 16, so their fp32 sum is exact in any order; the result is
bit-identical for any correct implementation when W is a power of two (otherwise up to the rounding of / W), and
skipping the quantization, zeros or no communication fail.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem

SCALE_EXPONENTS = (3, 4, 5)  # block scales 2^-3, 2^-4, 2^-5 (block max 15.9, 7.9, 4.0)


def make_inputs(ctx: InputContext):
    n = max(ctx.M * ctx.N, 64 * ctx.world_size)
    block_size = min(128, max(16, max(ctx.N // 4, 16)))
    ctx.seed(ctx.rank)
    blocks = -(-n // block_size)
    exponent = torch.tensor(SCALE_EXPONENTS)[torch.randint(len(SCALE_EXPONENTS), (blocks,))].to(ctx.device)
    amax = (127 * torch.pow(2.0, -exponent.float())).unsqueeze(1)
    x = torch.maximum(torch.minimum(torch.randn(blocks, block_size, device=ctx.device), 0.95 * amax), -0.95 * amax)
    # One element per block is exactly +-amax; it must lie in the unpadded part of the last block.
    valid_in_last = n - (blocks - 1) * block_size
    position = torch.randint(block_size, (blocks,), device=ctx.device)
    position[-1] %= valid_in_last
    sign = torch.randint(2, (blocks,), device=ctx.device).float() * 2 - 1
    x[torch.arange(blocks, device=ctx.device), position] = sign * amax.squeeze(1)
    x = x.to(ctx.dtype)
    # Move exact half-way points of x / scale one bf16 ulp toward zero (the raw bits of a bf16 are sign-magnitude).
    scaled = x.float() * torch.pow(2.0, exponent.float()).unsqueeze(1)
    tie = (scaled - scaled.floor()) == 0.5
    bits = x.view(torch.int16)
    bits[tie] -= 1
    return x.reshape(-1)[:n].clone(), block_size


def solution(flat_grad: torch.Tensor, block_size: int) -> torch.Tensor:
    with torch.no_grad():
        x = flat_grad.reshape(-1)
        n = x.numel()
        padding = -n % block_size
        if padding:
            x = torch.cat([x, x.new_zeros(padding)])
        blocks = x.view(-1, block_size)
        scale = blocks.abs().amax(dim=1, keepdim=True).float().clamp_min(1e-8) / 127
        q = torch.round(blocks.float() / scale).clamp_(-127, 127).to(torch.int8)
        dequantized = (q.float() * scale).reshape(-1)[:n].contiguous()
        dist.all_reduce(dequantized, op=dist.ReduceOp.SUM)
        dequantized /= dist.get_world_size()
        return dequantized.to(flat_grad.dtype).reshape(flat_grad.shape)


PROBLEM = Problem(id=44, make_inputs=make_inputs, solution=solution)
