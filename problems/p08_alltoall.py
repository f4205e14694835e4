"""8 alltoall: equal-split all-to-all of a (W, M, N) tensor along dim 0 over WORLD.

Interface as PKB: ``solution(tensor (W, M, N)) -> (W, M, N)``; output block s on rank r = input block r of rank s.

Decision (spec Pitfalls): PKB fills block d of rank r with the constant 10r + d, which does encode routing but is the
same in every trial, so a kernel could write 10s + r without communicating. We draw rank-specific standard-normal
data from the trial seed instead; the collective is pure data movement, so results are still exact copies.
At W = 1 the all-to-all is the identity, so returning the input is correct there (inherent, not a hole).
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    ctx.seed(ctx.rank)
    return (torch.randn(ctx.world_size, ctx.M, ctx.N, device=ctx.device).to(ctx.dtype),)


def solution(tensor: torch.Tensor) -> torch.Tensor:
    tensor = tensor.contiguous()
    out = torch.empty_like(tensor)
    dist.all_to_all_single(out, tensor)
    return out


PROBLEM = Problem(id=8, make_inputs=make_inputs, solution=solution)
