"""33 ulysses_all_to_all_tensor_primitive: Ulysses all-to-all that scatters one dim and gathers another over WORLD.

Interface as PKB: ``solution(x (M, N), scatter_dim=0, gather_dim=1, group=None) -> (M/W, W*N)``; on rank r,
``Y[:, s*N:(s+1)*N] = x_s[r*M/W:(r+1)*M/W]``, rank-specific. One list-form ``dist.all_to_all`` of W equal pieces.

Decisions (spec Pitfalls):
- W = 1 returns ``x.contiguous()``, i.e. the very input object, as PKB; so at W = 1 "the input returned unchanged"
  is the correct answer (inherent, not a hole).
- W must divide M (the scatter dim). ``allows_world_size`` can only see W, so it applies the rule at the default
  M = 1024; the builder raises ValueError for any other M that W does not divide, instead of hanging like PKB.
- The output is an exact permutation of inputs; we keep PKB's allclose tolerance (tests also check bit equality).
"""

import torch
import torch.distributed as dist

from problems._ulysses import all_to_all_tensor
from problems.base import InputContext, Problem

DEFAULT_M = 1024


def make_inputs(ctx: InputContext):
    if ctx.M % ctx.world_size:
        raise ValueError(f"W = {ctx.world_size} must divide M = {ctx.M} (the scatter dimension)")
    ctx.seed(ctx.rank)
    x = torch.randn(ctx.M, ctx.N, device=ctx.device).to(ctx.dtype)
    return x, 0, 1, None


def solution(x: torch.Tensor, scatter_dim: int, gather_dim: int, group=None) -> torch.Tensor:
    if dist.get_world_size(group) == 1:
        return x.contiguous()
    return all_to_all_tensor(x, scatter_dim, gather_dim, group)


PROBLEM = Problem(
    id=33, make_inputs=make_inputs, solution=solution, allows_world_size=lambda W: W >= 1 and DEFAULT_M % W == 0
)
