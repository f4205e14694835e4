"""4 reduce: sum reduce of an (M, N) tensor onto rank 0 over WORLD; non-roots return their own data.

Interface as PKB: ``solution(tensor (M, N), dst) -> (M, N)`` with the int 0 passed explicitly as ``dst``. The
reference copies the input and reduces the copy in place: rank dst returns the sum over ranks, every other rank an
unchanged copy of its own input (NCCL never writes a non-root's buffer). Out-of-place: no input is modified.

Decisions (spec Pitfalls):
- PKB's inputs are the constants r + 1 (a kernel writing W(W+1)/2 on rank 0 passes). We draw random integers in
  [-k, k], k = max(1, 256 // W): every partial sum is an integer of magnitude <= 256, exact in bf16, so the result
  is independent of the reduction order, yet constants, zeros or a missing rank fail.
- gloo's reduce uses the non-root buffers as scratch space (it overwrote them in our probe), unlike NCCL. On gloo
  only, non-roots therefore reduce a throw-away copy, so the returned tensor keeps the NCCL semantics.
- At W = 1 the reduce is the identity, so returning the input is correct there (inherent, not a hole).
"""

import torch
import torch.distributed as dist

from problems._collective_basics import exact_integers
from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    return exact_integers(ctx, (ctx.M, ctx.N)), 0


def solution(tensor: torch.Tensor, dst: int = 0) -> torch.Tensor:
    out = tensor.clone()
    if dist.get_backend() == "gloo" and dist.get_rank() != dst:
        dist.reduce(out.clone(), dst=dst, op=dist.ReduceOp.SUM)
    else:
        dist.reduce(out, dst=dst, op=dist.ReduceOp.SUM)
    return out


PROBLEM = Problem(id=4, make_inputs=make_inputs, solution=solution)
