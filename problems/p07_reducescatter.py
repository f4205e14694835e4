"""7 reducescatter: sum reduce-scatter of a (W*M, N) tensor along dim 0 over WORLD.

Interface as PKB: ``solution(tensor (W*M, N)) -> (M, N)``; rank r gets rows [r*M, (r+1)*M) of the sum over ranks.

Decisions (spec Pitfalls):
- PKB fills rank r with the constant r + 1, so its check sees only W(W+1)/2 and cannot detect a wrong block-to-rank
  assignment, a missing row offset, or a kernel that writes the constant. We draw random integers in [-k, k] with
  k = max(1, 256 // W), different in every row block: every partial sum is an integer of magnitude <= 256, exact in
  bf16, so the result is still independent of the reduction order (no slack needed), and misrouted blocks fail.
- At W = 1 the collective is the identity, so returning the input is correct there (inherent, not a hole).
- gloo (torch >= 2.x) implements reduce_scatter_tensor, so the same call serves both backends.
"""

import torch
import torch.distributed as dist

from problems._collective_basics import exact_integers
from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    return (exact_integers(ctx, (ctx.world_size * ctx.M, ctx.N)),)


def solution(tensor: torch.Tensor) -> torch.Tensor:
    world_size = dist.get_world_size()
    out = torch.empty(tensor.shape[0] // world_size, *tensor.shape[1:], dtype=tensor.dtype, device=tensor.device)
    dist.reduce_scatter_tensor(out, tensor.contiguous(), op=dist.ReduceOp.SUM)
    return out


PROBLEM = Problem(id=7, make_inputs=make_inputs, solution=solution)
