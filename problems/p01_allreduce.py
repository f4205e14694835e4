"""1 allreduce: sum all-reduce of one dense (M, N) tensor over WORLD.

Interface as PKB: ``solution(tensor) -> tensor``, out-of-place, identical on every rank.

Decision (spec Pitfalls): PKB fills rank r with the constant r + 1, so its check cannot tell a collective from a
kernel that writes W(W+1)/2. We draw random integers in [-k, k] with k = max(1, 256 // W) instead: every partial sum
is an integer of magnitude <= 256, exactly representable in bf16, so the result is still exact and independent of
the reduction order, yet a constant, zeros or a no-communication answer fails.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    ctx.seed(ctx.rank)
    bound = max(1, 256 // ctx.world_size)
    # Drawn in the run's dtype (the integers are exact in it): an int64 draw converted after moved 8x the bytes, harness
    # time whose noise hides work beside the spin from the probe check (docs/calibration.md, RELEASE_CACHE_BYTES).
    values = torch.randint(-bound, bound + 1, (ctx.M, ctx.N), device=ctx.device, dtype=ctx.dtype)
    return (values,)


def solution(tensor: torch.Tensor) -> torch.Tensor:
    out = tensor.clone()
    dist.all_reduce(out, op=dist.ReduceOp.SUM)
    return out


PROBLEM = Problem(id=1, make_inputs=make_inputs, solution=solution)
