"""55 ring_attention_tp: attention block with TP-sharded heads and CP ring attention: QKV projection, causal ring
attention over the CP group, output projection, all-reduce over the TP group.

Interface as PKB: ``solution(hidden_states (B, S_local, 512) D, w_qkv (3*heads_local*64, 512) D,
w_o (512, heads_local*64) D, num_heads = 8, softmax_scale = None, causal = False, tp_group, cp_group) ->
(B, S_local, 512)`` in D, identical within a TP group. The harness passes causal = True. tp = min(2, W), cp = W / tp;
TP groups {c*tp, ..., c*tp + tp - 1} are created first, then CP groups {t, t + tp, ...}; tp_rank = r % tp,
cp_rank = r // tp. w_qkv rows are [all q heads | all k heads | all v heads]. B = max(1, M // 64),
T = max(1, N // 64), S_local = max(1, T // cp).

Decisions:
- hidden_states is shared by the ranks of a TP group (seed key ("cp", cp_rank)), the weights by the ranks with the
  same tp_rank (key ("tp", tp_rank)): each TP rank's weights are independent draws, as in the spec.
- Weight scale: PKB scales randn by 0.02, which gives outputs of std 0.05-0.15 with 6-15% of the elements within
  atol of zero. We scale by fan_in^-0.5 instead (w_qkv by 512^-0.5, w_o by (heads_local*64)^-0.5, multiplied in
  D), so outputs have std ~ 0.6-0.8. Semantics are unchanged. The bf16 roundings of q/k/v, the context and the
  output then move elements by up to ~2% of the output's RMS against a float64 computation, so the check adds
  ``projection_slack`` = 0.04 * rms(expected) to atol = rtol = 1e-2 (effective atol ~ 0.04 against std ~ 0.7,
  far stronger than PKB's 0.01 against std ~ 0.1).
- TP all-reduce: the reference sums fp32 copies and rounds once; with tp = 2 that equals NCCL's bf16 sum of two.
- W = 1 or W even, as in the spec; W = 2 gives cp = 1 (a single local causal block, no ring).
- Null answers: zeros and the input unchanged miss by O(0.7); without the TP all-reduce one head half is missing;
  without the ring every CP rank but the first misses the earlier blocks.
"""

import torch
import torch.distributed as dist

from problems._ring_attention_cp import projection_slack, ring_attention
from problems.base import InputContext, Problem

NUM_HEADS, HEAD_DIM, HIDDEN = 8, 64, 512


def layout(W: int) -> tuple[int, int]:
    tp = min(2, W)
    return tp, W // tp


def make_inputs(ctx: InputContext):
    tp, cp = layout(ctx.world_size)
    tp_groups = [ctx.new_group(range(c * tp, (c + 1) * tp)) for c in range(cp)]
    cp_groups = [ctx.new_group(range(t, ctx.world_size, tp)) for t in range(tp)]
    tp_rank, cp_rank = ctx.rank % tp, ctx.rank // tp
    B, T = max(1, ctx.M // 64), max(1, ctx.N // 64)
    S_local = max(1, T // cp)
    heads_local = NUM_HEADS // tp
    ctx.seed(("cp", cp_rank))
    hidden_states = torch.randn(B, S_local, HIDDEN, dtype=ctx.dtype, device=ctx.device)
    ctx.seed(("tp", tp_rank))
    w_qkv = torch.randn(3 * heads_local * HEAD_DIM, HIDDEN, dtype=ctx.dtype, device=ctx.device) * HIDDEN**-0.5
    w_o = (
        torch.randn(HIDDEN, heads_local * HEAD_DIM, dtype=ctx.dtype, device=ctx.device)
        * (heads_local * HEAD_DIM) ** -0.5
    )
    return hidden_states, w_qkv, w_o, NUM_HEADS, None, True, tp_groups[cp_rank], cp_groups[tp_rank]


@torch.no_grad()
def solution(hidden_states, w_qkv, w_o, num_heads, softmax_scale=None, causal=False, tp_group=None, cp_group=None):
    tp_size = dist.get_world_size(tp_group) if tp_group is not None else 1
    heads_local = num_heads // tp_size
    head_dim = w_qkv.shape[0] // 3 // heads_local
    B, S, _ = hidden_states.shape
    qkv = (hidden_states @ w_qkv.t()).view(B, S, 3, heads_local, head_dim)
    q, k, v = (qkv[:, :, i].contiguous() for i in range(3))
    context = ring_attention(q, k, v, softmax_scale, causal, cp_group)
    out = context.reshape(B, S, heads_local * head_dim) @ w_o.t()
    if tp_size > 1:
        total = out.float()
        dist.all_reduce(total, op=dist.ReduceOp.SUM, group=tp_group)
        out = total.to(out.dtype)
    return out


PROBLEM = Problem(
    id=55,
    make_inputs=make_inputs,
    solution=solution,
    slack=projection_slack,
    allows_world_size=lambda W: W == 1 or (W >= 2 and W % 2 == 0),
)
