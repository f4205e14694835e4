"""16 gemm_reducescatter: K-sharded GEMM, then a sum reduce-scatter over row blocks (row-parallel, SP output).

Interface as PKB: ``solution(A_local (M, K/W), B_local (K/W, N)) -> (M/W, N)`` with K = 512 fixed; rank r returns
row block r of A_full @ B_full = sum over ranks of A_i @ B_i, where A_full concatenates the column blocks and B_full
stacks the row blocks in rank order. Inputs: A_local then B_local, standard normal, rank-specific.

Decisions:
- Reduction order (spec Pitfalls): PKB rounds each partial to bf16 and sums them with NCCL in bf16, so its expected
  output depends on the algorithm (ring/tree/NVLS) and ~10-15% of entries move beyond atol = rtol = 1e-2 between
  orders. Our reference rounds each rank's GEMM to D (as PKB), then reduce-scatters the partials in fp32 and
  rounds once; the check adds ``bf16_sum_slack``. The tests show that bf16 sums in any rotation of the rank order
  and a fully fused fp64 computation pass, while zeros, the rank's own partial or the wrong row block fail.
- World-size rule: the spec needs W | M and asks for W | 512. ``allows_world_size`` sees only W, so it admits the
  divisors of 512 (all of which divide the default M = 1024); ``make_inputs`` rejects M not divisible by W.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem, bf16_sum_slack

K = 512


def make_inputs(ctx: InputContext):
    if ctx.M % ctx.world_size:
        raise ValueError(f"16_gemm_reducescatter needs W | M; got W={ctx.world_size}, M={ctx.M}")
    ctx.seed(ctx.rank)
    A_local = torch.randn(ctx.M, K // ctx.world_size, dtype=ctx.dtype, device=ctx.device)
    B_local = torch.randn(K // ctx.world_size, ctx.N, dtype=ctx.dtype, device=ctx.device)
    return A_local, B_local


def solution(A_local: torch.Tensor, B_local: torch.Tensor) -> torch.Tensor:
    partial = (A_local @ B_local).float()  # rounded to D by the GEMM, as PKB; fp32 for an exact cross-rank sum
    rows = partial.shape[0] // dist.get_world_size()
    out = torch.empty(rows, partial.shape[1], dtype=partial.dtype, device=partial.device)
    dist.reduce_scatter_tensor(out, partial, op=dist.ReduceOp.SUM)
    return out.to(A_local.dtype)


PROBLEM = Problem(
    id=16,
    make_inputs=make_inputs,
    solution=solution,
    slack=bf16_sum_slack,
    allows_world_size=lambda W: W >= 1 and K % W == 0,
)
