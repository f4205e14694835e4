"""54 ring_attention: causal ring attention forward over WORLD (context parallel, contiguous sequence blocks).

Interface as PKB: ``solution(q, k, v (B, S_local, 8, 64) D, softmax_scale = None, causal = False, group = None) ->
(B, S_local, 8, 64)`` in D, rank-specific; the harness passes softmax_scale = None (1/8), causal = True and
group = None (WORLD). B = max(1, M // 64), T = max(1, N // 64), S_local = max(1, T // W); rank r holds global
positions [r*S_local, (r+1)*S_local). The ring and the fp32 lse merge are in ``_ring_attention_cp``.

Decisions:
- W must divide 8 (PKB's shared helper asserts 8 heads % W == 0), so W in {1, 2, 4, 8}, as in the spec.
- Precision: fp32 math as in the spec; outputs have std 0.4-0.9, so atol = rtol = 1e-2 is meaningful and a
  flash-style kernel with bf16 probabilities passes (spec simulation). No reduction order issue.
- Null answers: zeros and q returned unchanged miss by O(0.5). Without communication only rank 0 is right (it
  needs no remote block, by causality); every other rank misses, so the check (all ranks) rejects it.
"""

import torch

from problems._ring_attention_cp import ring_attention
from problems.base import InputContext, Problem

HEADS, HEAD_DIM = 8, 64


def make_inputs(ctx: InputContext):
    B, T = max(1, ctx.M // 64), max(1, ctx.N // 64)
    S_local = max(1, T // ctx.world_size)
    ctx.seed(ctx.rank)
    q, k, v = (torch.randn(B, S_local, HEADS, HEAD_DIM, dtype=ctx.dtype, device=ctx.device) for _ in range(3))
    return q, k, v, None, True, None


@torch.no_grad()
def solution(q, k, v, softmax_scale=None, causal=False, group=None):
    return ring_attention(q, k, v, softmax_scale, causal, group)


PROBLEM = Problem(id=54, make_inputs=make_inputs, solution=solution, allows_world_size=lambda W: W >= 1 and 8 % W == 0)
