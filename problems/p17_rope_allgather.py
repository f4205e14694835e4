"""17 rope_allgather: rotary embedding of a sequence shard of q and k, then all-gather along the sequence.

Interface as PKB: ``solution(q_local, k_local, cos_local, sin_local) -> (q_embed_global, k_embed_global)``, with
B = max(1, M // 64), T = max(1, N // 64), S_local = max(1, T // W), 8 heads of dim 64: q/k are (B, S_local, 8, 64),
cos/sin (B, S_local, 64), broadcast over heads. x_embed = x * cos + rotate_half(x) * sin, rotate_half(x) =
[-x[32:], x[:32]], each op in dtype D (rounded per op). q_embed then k_embed are all-gathered (list form) over WORLD
and concatenated along dim 1 in rank order: outputs (B, W * S_local, 8, 64), identical on every rank. If W > T the
global sequence is W; if W does not divide T it is W * (T // W) < T (as PKB). World-size rule: W | 8.

Decision (spec Pitfalls, per-op rounding): PKB draws cos/sin as unbounded standard normals, so products are large
and cancel, and a fused kernel (fp32 products, one rounding) fails PKB's check on a few elements per trial. We keep
the interface and the per-op reference but draw inputs that make a fair bound provable: q and k are standard normal
clipped to [-4, 4]; cos and sin are the cosine and sine of independent uniform angles in [-pi, pi) for every one of
the 64 positions (the halves are NOT duplicated as in HF models, so a kernel that reads only cos[..., :32] fails).
Then |x_i cos_i| + |x_j sin_i| <= 4 * sqrt(2) by Cauchy-Schwarz, and rounding the two products to D moves a result
by at most u * 4 * sqrt(2) (u = 2^-8 for bf16), about 0.022. That is the slack added to atol = rtol = 1e-2, so
fused and per-op kernels both pass by proof (with these bounded inputs a 40-trial simulation at the defaults found
no fused element beyond the plain tolerance either), while zeros, a wrong rotate_half sign, missing rotation, a
wrong concatenation or a rank's local result fail by O(1).
"""

import math

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem

HEADS = 8
HEAD_DIM = 64
CLIP = 4.0


def shapes(M: int, N: int, world_size: int):
    """(B, S_local) for base shape (M, N) at world size W, as PKB's builder."""
    batch, seq = max(1, M // 64), max(1, N // 64)
    return batch, max(1, seq // world_size)


def make_inputs(ctx: InputContext):
    batch, seq_local = shapes(ctx.M, ctx.N, ctx.world_size)
    ctx.seed(ctx.rank)
    q_local = torch.randn(batch, seq_local, HEADS, HEAD_DIM, device=ctx.device).clamp(-CLIP, CLIP).to(ctx.dtype)
    k_local = torch.randn(batch, seq_local, HEADS, HEAD_DIM, device=ctx.device).clamp(-CLIP, CLIP).to(ctx.dtype)
    angle = (torch.rand(batch, seq_local, HEAD_DIM, device=ctx.device) * 2 - 1) * math.pi
    return q_local, k_local, torch.cos(angle).to(ctx.dtype), torch.sin(angle).to(ctx.dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _gather_sequence(x: torch.Tensor) -> torch.Tensor:
    parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, x.contiguous())
    return torch.cat(parts, dim=1)


def solution(q_local: torch.Tensor, k_local: torch.Tensor, cos_local: torch.Tensor, sin_local: torch.Tensor):
    cos, sin = cos_local.unsqueeze(2), sin_local.unsqueeze(2)  # broadcast over heads
    q_embed = q_local * cos + _rotate_half(q_local) * sin  # three D ops, each rounded, as PKB
    k_embed = k_local * cos + _rotate_half(k_local) * sin
    if not dist.is_initialized():
        return q_embed, k_embed
    return _gather_sequence(q_embed), _gather_sequence(k_embed)


def product_rounding_slack(expected: torch.Tensor, world_size: int) -> float:
    """Bound on the effect of rounding the two products to D: u * CLIP * sqrt(2) (1% for rounded cos/sin)."""
    unit = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11}.get(expected.dtype, 2.0**-24)
    return unit * CLIP * math.sqrt(2) * 1.01


PROBLEM = Problem(
    id=17,
    make_inputs=make_inputs,
    solution=solution,
    slack=product_rounding_slack,
    allows_world_size=lambda W: W >= 1 and 8 % W == 0,
)
