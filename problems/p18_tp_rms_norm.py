"""18 tp_rms_norm: RMSNorm (LlamaRMSNorm recipe) over a hidden dimension sharded across the W ranks.

Interface as PKB: ``solution(local_hidden_states (M, N) D, local_weight (N,) D, variance_epsilon: float) -> (M, N) D``,
rank-specific; the global hidden size is N * W. One all_reduce (SUM, fp32) of the (M, 1) sums of squares on WORLD.

Decisions (spec Pitfalls):
- The sum of squares is reduced in fp32 as the spec says; the order of W fp32 additions moves the result by ~1e-7
  relative, far inside atol = rtol = 1e-2, so the default tolerance is kept without slack.
- The output is rounded twice (normalized value to D, then times the D weight), as the recipe does; a fused
  single-rounding computation is within tolerance.
- Inputs are random as in PKB (hidden states and signed weights standard normal, rank-specific). Zeros, the input
  returned unchanged, and a rank normalizing by its local mean square (no communication, off by about sqrt(W))
  all fail.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem

EPS = 1e-5


def make_inputs(ctx: InputContext):
    ctx.seed(ctx.rank)
    local_hidden_states = torch.randn(ctx.M, ctx.N, dtype=ctx.dtype, device=ctx.device)
    local_weight = torch.randn(ctx.N, dtype=ctx.dtype, device=ctx.device)
    return local_hidden_states, local_weight, EPS


def solution(local_hidden_states: torch.Tensor, local_weight: torch.Tensor, variance_epsilon: float) -> torch.Tensor:
    x = local_hidden_states.float()
    sum_sq = x.pow(2).sum(dim=-1, keepdim=True)
    dist.all_reduce(sum_sq, op=dist.ReduceOp.SUM)
    global_hidden = x.shape[-1] * dist.get_world_size()
    y = x * torch.rsqrt(sum_sq / global_hidden + variance_epsilon)
    return local_weight * y.to(local_hidden_states.dtype)


PROBLEM = Problem(id=18, make_inputs=make_inputs, solution=solution)
