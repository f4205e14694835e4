"""76 opensora_conv3d_allreduce: input-channel-parallel (row-parallel) Conv3d, partial outputs summed by all-reduce.

Interface as PKB: ``solution(input, weight, bias, stride, padding, dilation, groups=1, group=None)`` ->
(1, C_out, 17, 64, 64) D, identical on every rank. C_out is the first of 512, 256, 128 that W divides (else 512),
each rank holds C_out div W input channels and its own slice of the weight; bias is shared and added once, after
the reduction. Ints for stride, padding and dilation are expanded to 3-tuples.

Decisions (spec Pitfalls):
- Reduction order (the main issue): PKB sums the bf16 partials with NCCL in bf16, so 12-18% of the elements depend
  on the summation order. Our reference rounds each rank's convolution to D (as PKB), sums the partials in fp32,
  rounds once, then adds the bias in D. The check adds ``bf16_sum_slack`` (the rounding error of any order of W
  bf16 additions, from the output's RMS) to atol: a plain NCCL bf16 all-reduce, a ring from any start and an fp32
  reduction all pass, while zeros or one rank's partial (no communication, off by O(RMS)) fail.
- fp32 runs: cuDNN may run an fp32 convolution in TF32 (PyTorch's default), so for fp32 the slack adds 2^-9 of the
  output's RMS, about the TF32 error of one partial.
- PKB's chunking above 2^31 elements is dead code at these sizes and is not reproduced.
- W may be up to 512 (C_in_local = C_out div W must stay >= 1).
- Reduced (CPU development only): the input is (1, C_in_local, 4, 8, 8) instead of (.., 19, 66, 66), so the
  output is (1, C_out, 2, 6, 6); channels follow the spec.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.base import InputContext, Problem, bf16_sum_slack


def out_channels(W: int) -> int:
    return next((c for c in (512, 256, 128) if c % W == 0), 512)


def make_inputs(ctx: InputContext):
    C_out = out_channels(ctx.world_size)
    C_in = C_out // ctx.world_size
    T, Hgt, Wid = (4, 8, 8) if ctx.reduced else (19, 66, 66)
    ctx.seed(ctx.rank)
    x = torch.randn(1, C_in, T, Hgt, Wid, dtype=ctx.dtype, device=ctx.device)
    weight = torch.randn(C_out, C_in, 3, 3, 3, dtype=ctx.dtype, device=ctx.device)
    bias = torch.linspace(-0.1, 0.1, C_out, dtype=ctx.dtype, device=ctx.device)
    return x, weight, bias, 1, 0, 1, 1, None  # stride, padding, dilation, groups, group (world)


def _triple(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * 3


def slack(expected: torch.Tensor, world_size: int) -> float:
    """Any order of the W low-precision additions; for fp32 also TF32 convolutions."""
    extra = bf16_sum_slack(expected, world_size)
    if expected.dtype == torch.float32 and expected.numel():
        extra += 2.0**-9 * expected.float().pow(2).mean().sqrt().item()
    return extra


@torch.no_grad()
def solution(input, weight, bias, stride, padding, dilation, groups=1, group=None):
    partial = F.conv3d(input, weight, None, _triple(stride), _triple(padding), _triple(dilation), groups)
    total = partial.float()  # the rank's partial is rounded to D first, as PKB's; the sum is then in fp32
    dist.all_reduce(total, op=dist.ReduceOp.SUM, group=group)
    out = total.to(input.dtype)
    if bias is not None:
        out = out + bias.view(1, -1, 1, 1, 1)
    return out


PROBLEM = Problem(
    id=76, make_inputs=make_inputs, solution=solution, slack=slack, allows_world_size=lambda W: 1 <= W <= 512
)
