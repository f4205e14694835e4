"""34 ulysses_all_gather_into_tensor_primitive: all-gather each rank's (M, N) shard along dim 0 over WORLD.

Interface as PKB: ``solution(x (M, N), group=None) -> (W*M, N)``, ``Y[s*M:(s+1)*M] = x_s``, identical on every rank.
One ``all_gather_into_tensor`` into a freshly allocated buffer.

Decisions (spec Pitfalls):
- W = 1 returns the input object itself, as PKB; so at W = 1 "the input returned unchanged" is the correct answer
  (inherent, not a hole).
- The output is an exact copy; we keep PKB's allclose tolerance (tests also check bit equality).
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    ctx.seed(ctx.rank)
    return torch.randn(ctx.M, ctx.N, device=ctx.device).to(ctx.dtype), None


def solution(x: torch.Tensor, group=None) -> torch.Tensor:
    world_size = dist.get_world_size(group)
    if world_size == 1:
        return x
    x = x.contiguous()
    out = torch.empty((world_size * x.shape[0], *x.shape[1:]), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(out, x, group=group)
    return out


PROBLEM = Problem(id=34, make_inputs=make_inputs, solution=solution)
