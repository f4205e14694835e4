"""20 blocked_fp8_dequantize: 1x128-block dequantization to fp32, then all-to-all of per-destination chunks.

Interface as PKB: ``solution(local_y (W, M, N) D, local_s (W, M*N/128) D, block_size: int = 128) -> (W, M, N)
float32``, rank-specific. x[i] = fp32(y[i]) * fp32(s[i // 128]) over the flattened (W, M, N) tensor (chunk j uses
the scales in row j), then one equal-split all_to_all_single on WORLD: out[i] on rank r = rank i's chunk r.

Decisions (spec Pitfalls):
- The inputs are D-typed normals and the "scales" are signed normals, as in PKB: nothing is a real fp8 format, but
  the semantics (one scale per 128 flattened elements) are what is checked, and values are random so zeros, the
  input returned unchanged (also the wrong dtype) and the rank's own dequantized chunks (no communication) fail.
- The product of two bf16/fp16 values is exact in fp32, so every correct implementation (dequantize before or after
  the exchange) matches bit for bit; the default tolerance is kept.
- The output is float32 whatever D is; the dtype is checked.
- M * N must be a multiple of 128 (asserted, as in PKB); the builder refuses other shapes.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem

BLOCK = 128


def make_inputs(ctx: InputContext):
    if (ctx.M * ctx.N) % BLOCK:
        raise ValueError(f"M * N = {ctx.M * ctx.N} must be a multiple of the block size {BLOCK}")
    ctx.seed(ctx.rank)
    W = ctx.world_size
    local_y = torch.randn(W, ctx.M, ctx.N, dtype=ctx.dtype, device=ctx.device)
    local_s = torch.randn(W, ctx.M * ctx.N // BLOCK, dtype=ctx.dtype, device=ctx.device)
    return local_y, local_s, BLOCK


def solution(local_y: torch.Tensor, local_s: torch.Tensor, block_size: int = 128) -> torch.Tensor:
    assert (local_y[0].numel() % block_size) == 0, "each destination chunk must hold whole blocks"
    x = local_y.float().reshape(-1, block_size) * local_s.float().reshape(-1, 1)
    x = x.view(local_y.shape)
    out = torch.empty_like(x)
    dist.all_to_all_single(out, x)
    return out


PROBLEM = Problem(id=20, make_inputs=make_inputs, solution=solution)
