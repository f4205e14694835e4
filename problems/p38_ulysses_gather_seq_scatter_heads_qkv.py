"""38 ulysses_gather_seq_scatter_heads_qkv: Ulysses all-to-all on a packed QKV projection (gather the sequence,
scatter the heads of q, k and v together).

Interface as PKB: ``solution(qkv_tensor (B, T, 3*512), seq_dim=1, group=None, unpadded_dim_size=None,
restore_shape=True) -> (B, W*T, 3*512/W)`` with B = max(1, M // 64), T = max(1, N // 64), C = 8 heads * 64 = 512,
c = C/W. The input is viewed as (B, T, 3, C), its last dim split into W chunks (chunk j = heads of rank j for q, k
and v alike), exchanged with one list-form ``dist.all_to_all``, concatenated along the sequence in source order and
viewed back as (B, W*T, 3*c): ``Y_r[:, s*T:(s+1)*T, j*c:(j+1)*c] = qkv_s[:, :, j*C + r*c : j*C + (r+1)*c]``.

Decisions (spec Pitfalls):
- W must divide num_heads = 8 (the builder raises otherwise). No W = 1 shortcut: a 1-rank all-to-all runs, whose
  result equals the input, so at W = 1 "the input returned unchanged" is the correct answer (inherent).
- ``unpadded_dim_size`` (None in PKB, read as 0) trims the gathered sequence when non-zero and not divisible by W;
  ``restore_shape=False`` returns the 4-D (B, W*T, 3, c) tensor. Neither is exercised by the builder, as in PKB.
- The output is an exact permutation; we keep PKB's allclose tolerance (tests also check bit equality).
"""

import torch
import torch.distributed as dist

from problems._ulysses import HEAD_DIM, HEADS, all_to_all_tensor, attention_dims, check_heads_world_size
from problems.base import InputContext, Problem

WIDTH = HEADS * HEAD_DIM  # C


def make_inputs(ctx: InputContext):
    check_heads_world_size(ctx.world_size)
    B, T = attention_dims(ctx.M, ctx.N)
    ctx.seed(ctx.rank)
    qkv = torch.randn(B, T, 3 * WIDTH, device=ctx.device).to(ctx.dtype)
    return qkv, 1, None, None, True


def solution(
    qkv_tensor: torch.Tensor, seq_dim: int, group=None, unpadded_dim_size=None, restore_shape: bool = True
) -> torch.Tensor:
    world_size = dist.get_world_size(group)
    *lead, width3 = qkv_tensor.shape
    packed = qkv_tensor.reshape(*lead, 3, width3 // 3)  # (B, T, 3, C): the scatter dim is the new last dim
    out = all_to_all_tensor(packed, packed.dim() - 1, seq_dim, group)
    if unpadded_dim_size and unpadded_dim_size % world_size:
        out = out.narrow(seq_dim, 0, unpadded_dim_size).contiguous()
    if restore_shape:
        out = out.view(*out.shape[:-2], -1)
    return out


PROBLEM = Problem(
    id=38, make_inputs=make_inputs, solution=solution, allows_world_size=lambda W: W >= 1 and HEADS % W == 0
)
