"""3 broadcast: out-of-place broadcast of an (M, N) tensor from rank 0 over WORLD.

Interface as PKB: ``solution(tensor (M, N), src=0) -> (M, N)``; the input tuple holds only ``tensor`` (src keeps its
default 0). Every rank returns a copy of rank 0's tensor; no input is modified (the reference clones first).

Decisions (spec Pitfalls):
- PKB fills rank r with r + 1, so the expected result is the constant 1.0 and writing ones passes. We draw
  rank-specific standard-normal data from the trial seed: only rank 0's data reaches the output, which must now be
  communicated. Pure data movement, so results are exact copies.
- At W = 1 the broadcast is the identity, so returning the input is correct there (inherent, not a hole); at W > 1
  it is correct on rank 0 only and fails on every other rank.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    ctx.seed(ctx.rank)
    return (torch.randn(ctx.M, ctx.N, device=ctx.device).to(ctx.dtype),)


def solution(tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
    out = tensor.clone()
    dist.broadcast(out, src=src)
    return out


PROBLEM = Problem(id=3, make_inputs=make_inputs, solution=solution)
