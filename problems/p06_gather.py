"""6 gather: gather one (M, N) tensor per rank onto rank 0 as a stacked (W, M, N) tensor over WORLD.

Interface as PKB: ``solution(tensor (M, N), dst=0)``; the input tuple holds only ``tensor`` (dst keeps its default
0). Output shapes differ by rank: rank 0 returns (W, M, N) with slot s = rank s's tensor; every other rank returns
its input tensor itself (the same object).

Decisions (spec Pitfalls):
- PKB fills rank r with the constant r + 1, so rank 0 could synthesise its result without communicating. We draw
  rank-specific standard-normal data from the trial seed instead; pure data movement, so results are exact copies.
- On non-roots the expected output IS the input, so "input returned unchanged" is correct there; it fails on rank 0
  (shape (M, N) instead of (W, M, N)), and so does rank 0's own tensor repeated W times.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    ctx.seed(ctx.rank)
    return (torch.randn(ctx.M, ctx.N, device=ctx.device).to(ctx.dtype),)


def solution(tensor: torch.Tensor, dst: int = 0) -> torch.Tensor:
    if dist.get_rank() != dst:
        dist.gather(tensor, None, dst=dst)
        return tensor
    slots = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.gather(tensor, slots, dst=dst)
    return torch.stack(slots)


PROBLEM = Problem(id=6, make_inputs=make_inputs, solution=solution)
