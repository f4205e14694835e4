"""2 allgather: all-gather one (M, N) tensor per rank into a stacked (W, M, N) tensor over WORLD.

Interface as PKB: ``solution(tensor (M, N)) -> (W, M, N)``, slot s = rank s's tensor, identical on every rank; a
new leading dimension, not a (W*M, N) concatenation (a reshape fails on shape).

Decision (spec Pitfalls): PKB fills rank r with the constant r + 1, so a kernel that synthesises s + 1 without
communicating passes its check. We draw rank-specific standard-normal data from the trial seed instead: the
collective is pure data movement, so the result is still an exact copy, and only a real gather reproduces it.
"""

import torch

from problems._collective_basics import all_gather_stacked
from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    ctx.seed(ctx.rank)
    return (torch.randn(ctx.M, ctx.N, device=ctx.device).to(ctx.dtype),)


def solution(tensor: torch.Tensor) -> torch.Tensor:
    return all_gather_stacked(tensor)


PROBLEM = Problem(id=2, make_inputs=make_inputs, solution=solution)
