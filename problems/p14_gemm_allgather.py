"""14 gemm_allgather: local column-block GEMM, then all-gather of the blocks along columns (column-parallel linear).

Interface as PKB: ``solution(A (M, K), B (K, N_local)) -> (M, W*N_local)`` with K = 512 fixed and
N_local = N // W, identical on every rank. Both A and B are drawn with the rank's seed, so A DIFFERS per rank (not a
replicated activation): output columns [s*N_local, (s+1)*N_local) = A_s @ B_s, computed where A_s lives. As PKB, the
reference uses the list form of all_gather and concatenates along dim 1 in rank order.

Decisions:
- World-size rule: 1 <= W <= N. ``allows_world_size`` sees only W, so it admits 1 <= W <= 1024 (the default N) and
  ``make_inputs`` rejects W > N for other N. When W does not divide N the output is W * (N // W) wide, as PKB.
- No cross-rank arithmetic: each block is one GEMM rounded once, so the default atol = rtol = 1e-2 needs no slack;
  the inputs are already random per rank and trial, so zeros or a rank's own block alone fail.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem

K = 512
DEFAULT_N = 1024


def make_inputs(ctx: InputContext):
    if ctx.world_size > ctx.N:
        raise ValueError(f"14_gemm_allgather needs W <= N; got W={ctx.world_size}, N={ctx.N}")
    ctx.seed(ctx.rank)
    A = torch.randn(ctx.M, K, dtype=ctx.dtype, device=ctx.device)
    B = torch.randn(K, ctx.N // ctx.world_size, dtype=ctx.dtype, device=ctx.device)
    return A, B


def solution(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    local = A @ B
    blocks = [torch.empty_like(local) for _ in range(dist.get_world_size())]
    dist.all_gather(blocks, local)
    return torch.cat(blocks, dim=1)


PROBLEM = Problem(id=14, make_inputs=make_inputs, solution=solution, allows_world_size=lambda W: 1 <= W <= DEFAULT_N)
