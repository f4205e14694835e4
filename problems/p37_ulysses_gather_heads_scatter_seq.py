"""37 ulysses_gather_heads_scatter_seq: Ulysses post-attention all-to-all (gather the heads, scatter the sequence).

Interface as PKB: ``solution(x (B, T, 8, 64), seq_dim=1, head_dim=2, group=None) -> (B, T'/W, W*8, 64)`` with
B = max(1, M // 64), T = max(1, N // 64), T' = ceil(T / W) * W; the sequence is zero-padded to T' first (not
trimmed afterwards). On rank r, ``Y[:, :, s*8:(s+1)*8] = pad(x_s)[:, r*T'/W:(r+1)*T'/W]``, rank-specific.
One list-form ``dist.all_to_all``.

Decisions (spec Pitfalls):
- W must divide num_heads = 8 (the builder raises otherwise). No W = 1 shortcut: a 1-rank all-to-all runs, whose
  result equals the input, so at W = 1 "the input returned unchanged" is the correct answer (inherent).
- Padding only triggers for small N (T < W or T % W != 0); a rank whose positions all fall in the padding (e.g.
  T = 3, W = 4, rank 3) must return zeros there, so the zeros null passes on that rank (inherent; never at the
  default N = 1024, where T = 16).
- As in PKB, x is random data of the (batch, sequence, heads, dim) shape, not problem 36's output.
- The output is an exact permutation plus zero padding; we keep PKB's allclose tolerance (tests also check bit
  equality).
"""

import torch

from problems._ulysses import HEAD_DIM, HEADS, attention_dims, check_heads_world_size, gather_heads_scatter_seq
from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    check_heads_world_size(ctx.world_size)
    B, T = attention_dims(ctx.M, ctx.N)
    ctx.seed(ctx.rank)
    x = torch.randn(B, T, HEADS, HEAD_DIM, device=ctx.device).to(ctx.dtype)
    return x, 1, 2, None


def solution(x: torch.Tensor, seq_dim: int, head_dim: int, group=None) -> torch.Tensor:
    return gather_heads_scatter_seq(x, head_dim, seq_dim, group)


PROBLEM = Problem(
    id=37, make_inputs=make_inputs, solution=solution, allows_world_size=lambda W: W >= 1 and HEADS % W == 0
)
