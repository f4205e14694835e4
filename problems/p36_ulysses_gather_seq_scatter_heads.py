"""36 ulysses_gather_seq_scatter_heads: Ulysses pre-attention all-to-all (gather the sequence, scatter the heads).

Interface as PKB: ``solution(x (B, T, 8, 64), seq_dim=1, head_dim=2, group=None, unpadded_dim_size=0)
-> (B, W*T, 8/W, 64)`` with B = max(1, M // 64), T = max(1, N // 64); on rank r,
``Y[:, s*T:(s+1)*T] = x_s[:, :, r*8/W:(r+1)*8/W]``, rank-specific. One list-form ``dist.all_to_all``.

Decisions (spec Pitfalls):
- W must divide num_heads = 8 (the builder raises otherwise); no W = 1 shortcut: a 1-rank all-to-all runs, whose
  result equals the input, so at W = 1 "the input returned unchanged" is the correct answer (inherent).
- ``unpadded_dim_size`` (0 in PKB, inert) is implemented: a non-zero value not divisible by W trims the gathered
  sequence to that length.
- The output is an exact permutation; we keep PKB's allclose tolerance (tests also check bit equality).
"""

import torch

from problems._ulysses import HEAD_DIM, HEADS, attention_dims, check_heads_world_size, gather_seq_scatter_heads
from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    check_heads_world_size(ctx.world_size)
    B, T = attention_dims(ctx.M, ctx.N)
    ctx.seed(ctx.rank)
    x = torch.randn(B, T, HEADS, HEAD_DIM, device=ctx.device).to(ctx.dtype)
    return x, 1, 2, None, 0


def solution(x: torch.Tensor, seq_dim: int, head_dim: int, group=None, unpadded_dim_size: int = 0) -> torch.Tensor:
    return gather_seq_scatter_heads(x, seq_dim, head_dim, unpadded_dim_size, group)


PROBLEM = Problem(
    id=36, make_inputs=make_inputs, solution=solution, allows_world_size=lambda W: W >= 1 and HEADS % W == 0
)
