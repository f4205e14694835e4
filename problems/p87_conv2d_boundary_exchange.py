"""87 conv2d_boundary_exchange: height-sharded 3x3 Conv2d with a halo exchange (DistriFusion patch parallelism): the
ranks' boundary rows are all-gathered and each rank convolves its block padded with its neighbours' rows.

Interface as PKB: ``solution(x (1, C, h, 128) D, weight (C, C, 3, 3) D, bias (C,) D, stride=1, padding=1,
group=None) -> (1, C, h, 128) D``, rank-specific. C = (320, 640, 1280)[min(N div 512, 2)],
h = max(3, 128 div max(1, W div 2)). Weight and bias differ per rank (each rank applies its own), and the chain runs
over all W ranks of the world (PKB's "chain mismatch" is kept: rank W/2 - 1 and W/2 exchange halos too).

Decisions (spec Pitfalls):
- Bias rounding: as PKB (cuDNN), the convolution is rounded to D and the bias is then added in D, for W = 1 too.
  A candidate that fuses the bias into an fp32 epilogue (one rounding) can differ by half a bf16 step of the
  pre-bias value, which exceeds atol + rtol*|out| where the bias cancels the convolution; ``slack`` adds 0.03 to
  atol for 16-bit dtypes (2^-8 * 1.5 * 5, a bound on |bias| for N(0, 1) draws). Outputs have std ~100 at full
  size, so zeros and a no-halo answer (the boundary rows are off by O(std)) still fail. For fp32 runs the slack is
  2^-9 of the output's RMS instead, about the error of a TF32 convolution (cuDNN's default for fp32).
- Reduced (CPU development only): C is divided by 10 (32, 64, 128) and the width is 16 instead of 128; h follows
  the spec.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    W = ctx.world_size
    C = (320, 640, 1280)[min(ctx.N // 512, 2)]
    width = 128
    if ctx.reduced:
        C, width = C // 10, 16
    h = max(3, 128 // max(1, W // 2))
    ctx.seed(ctx.rank)
    x = torch.randn(1, C, h, width, dtype=ctx.dtype, device=ctx.device)
    weight = torch.randn(C, C, 3, 3, dtype=ctx.dtype, device=ctx.device)
    bias = torch.randn(C, dtype=ctx.dtype, device=ctx.device)
    return x, weight, bias, 1, 1, None


def _conv_then_bias(x, weight, bias, stride, padding):
    out = F.conv2d(x, weight, None, stride, padding)  # rounded to D
    return out if bias is None else out + bias.view(1, -1, 1, 1)  # then the bias, in D


def slack(expected: torch.Tensor, world_size: int) -> float:
    if expected.dtype in (torch.bfloat16, torch.float16):
        return 0.03
    return 2.0**-9 * expected.float().pow(2).mean().sqrt().item() if expected.numel() else 0.0


@torch.no_grad()
def solution(x, weight, bias, stride=1, padding=1, group=None):
    W, rank = dist.get_world_size(group), dist.get_rank(group)
    pad_h, pad_w = (padding, padding) if isinstance(padding, int) else tuple(padding)
    if pad_h == 0 or W == 1:
        return _conv_then_bias(x, weight, bias, stride, padding)
    b = pad_h
    edges = torch.stack([x[:, :, :b], x[:, :, -b:]]).contiguous()  # (2, 1, C, b, width): top rows, bottom rows
    gathered = [torch.empty_like(edges) for _ in range(W)]
    dist.all_gather(gathered, edges, group=group)
    zeros = torch.zeros_like(edges[0])
    above = gathered[rank - 1][1] if rank > 0 else zeros  # the bottom rows of rank r-1
    below = gathered[rank + 1][0] if rank < W - 1 else zeros  # the top rows of rank r+1
    padded = torch.cat([above, x, below], dim=2)
    return _conv_then_bias(padded, weight, bias, stride, (0, pad_w))


PROBLEM = Problem(id=87, make_inputs=make_inputs, solution=solution, slack=slack)
