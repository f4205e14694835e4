"""5 scatter: rank 0 scatters the W slices of a (W, M, N) tensor, one (M, N) slice per rank, over WORLD.

Interface as PKB: ``solution(tensor, src=0) -> (M, N)``; the input tuple holds only ``tensor`` (src keeps its
default 0). Shapes differ by rank: rank 0 holds (W, M, N), every other rank an all-zeros (M, N) tensor that only
serves as the receive buffer's initial value. Rank r returns slice r of rank 0's tensor (rank 0 keeps slice 0).

Decisions (spec Pitfalls):
- PKB fills slice i with the constant i + 1, so a kernel writing r + 1 locally passes. Rank 0's tensor is
  standard-normal data from the trial seed instead, so each rank's slice must be communicated. Pure data movement,
  so results are exact copies.
- The non-source inputs stay all zeros, as the spec says: their values never reach the output, and returning them
  unchanged (or zeros) fails.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    if ctx.rank == 0:
        ctx.seed("source")
        return (torch.randn(ctx.world_size, ctx.M, ctx.N, device=ctx.device).to(ctx.dtype),)
    return (torch.zeros(ctx.M, ctx.N, dtype=ctx.dtype, device=ctx.device),)


def solution(tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
    if dist.get_rank() == src:
        pieces = [piece.contiguous() for piece in tensor.unbind(0)]
        out = torch.empty_like(pieces[0])
        dist.scatter(out, pieces, src=src)
    else:
        out = tensor.clone()
        dist.scatter(out, None, src=src)
    return out


PROBLEM = Problem(id=5, make_inputs=make_inputs, solution=solution)
