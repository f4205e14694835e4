"""13 gemm_allreduce: local GEMM then sum all-reduce (row-parallel linear).

Interface as PKB: ``solution(A_local (M, 512), B_local (512, N)) -> (M, N)``, identical on every rank.

Decision (spec Pitfalls, reduction order): PKB sums the bf16 partials with NCCL in bf16, so its expected output
depends on the algorithm and topology NCCL picks. Our reference rounds each rank's GEMM to bf16 (as PKB) and then
sums the partials in fp32, rounding once to bf16. The check allows, on top of atol = rtol = 1e-2, the rounding
error of any order of W bf16 additions (``bf16_sum_slack``), so a plain NCCL bf16 all-reduce, a ring in any start
order and an fp32 reduction all pass, while zeros or a rank's own partial (no communication) miss by O(RMS).
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem, bf16_sum_slack

K = 512


def make_inputs(ctx: InputContext):
    ctx.seed(ctx.rank)
    A_local = torch.randn(ctx.M, K, dtype=ctx.dtype, device=ctx.device)
    B_local = torch.randn(K, ctx.N, dtype=ctx.dtype, device=ctx.device)
    return A_local, B_local


def solution(A_local: torch.Tensor, B_local: torch.Tensor) -> torch.Tensor:
    partial = (A_local @ B_local).float()
    dist.all_reduce(partial, op=dist.ReduceOp.SUM)
    return partial.to(A_local.dtype)


PROBLEM = Problem(id=13, make_inputs=make_inputs, solution=solution, slack=bf16_sum_slack)
