"""56 ring_attention_pp: two-stage pipeline of attention blocks, each with causal CP ring attention; stage 0 sends
its output to stage 1 with a blocking send.

Interface as PKB: ``solution(hidden_states (B, S_local, 512) D, w_qkv (1536, 512) D, w_o (512, 512) D,
num_heads = 8, softmax_scale = None, causal = False, cp_group, pp_group) -> (B, S_local, 512)`` in D, the rank's own
stage output. The harness passes causal = True. pp = min(2, W), cp = W / pp; CP groups {p*cp, ..., p*cp + cp - 1}
are created first, then PP groups {c, c + cp}; cp_rank = r % cp, pp_rank = r // cp. Stage 0 returns A0(h), stage 1
returns A1(A0(h)) for its sequence block (h = the CP blocks of hidden_states in order); stage 1 receives its input
into a fresh buffer (blocking recv posted before its attention) and never reads its own hidden_states.
B = max(1, M // 64), T = max(1, N // 64), S_local = max(1, T // cp).

Decisions:
- hidden_states is shared by the two stages of a cp_rank (seed key ("cp", cp_rank)), the weights by the CP ranks
  of a stage (key ("pp", pp_rank)), as in the spec.
- Weight scale (spec Pitfalls: stage-1 outputs have std 0.015-0.03 against atol = 0.01, a weak check): PKB scales
  randn by 0.02; we scale by fan_in^-0.5 = 512^-0.5 (multiplied in D), which keeps the activations' scale through
  both blocks: outputs of both stages have std ~ 0.6-0.9. Semantics are unchanged. The bf16 roundings of q/k/v,
  the context, the block output and the stage-0 output sent to stage 1 then move elements by up to ~2% of the
  output's RMS against a float64 computation, so the check adds ``projection_slack`` = 0.04 * rms(expected) to
  atol = rtol = 1e-2 (effective atol ~ 0.04 against std ~ 0.8; PKB's stage-1 check was 0.01 against std ~ 0.02).
- W = 1 or W even, as in the spec; W = 2 gives two single-rank stages with local causal attention.
- Null answers: zeros and the input unchanged miss by O(0.5); without communication stage 1 works on an unfilled
  buffer and every CP rank but the first misses the earlier blocks.
"""

import torch
import torch.distributed as dist

from problems._ring_attention_cp import projection_slack, ring_attention
from problems.base import InputContext, Problem

NUM_HEADS, HEAD_DIM, HIDDEN = 8, 64, 512


def layout(W: int) -> tuple[int, int]:
    pp = min(2, W)
    return pp, W // pp


def make_inputs(ctx: InputContext):
    pp, cp = layout(ctx.world_size)
    cp_groups = [ctx.new_group(range(p * cp, (p + 1) * cp)) for p in range(pp)]
    pp_groups = [ctx.new_group(range(c, ctx.world_size, cp)) for c in range(cp)]
    cp_rank, pp_rank = ctx.rank % cp, ctx.rank // cp
    B, T = max(1, ctx.M // 64), max(1, ctx.N // 64)
    S_local = max(1, T // cp)
    ctx.seed(("cp", cp_rank))
    hidden_states = torch.randn(B, S_local, HIDDEN, dtype=ctx.dtype, device=ctx.device)
    ctx.seed(("pp", pp_rank))
    w_qkv = torch.randn(3 * HIDDEN, HIDDEN, dtype=ctx.dtype, device=ctx.device) * HIDDEN**-0.5
    w_o = torch.randn(HIDDEN, HIDDEN, dtype=ctx.dtype, device=ctx.device) * HIDDEN**-0.5
    return hidden_states, w_qkv, w_o, NUM_HEADS, None, True, cp_groups[pp_rank], pp_groups[cp_rank]


@torch.no_grad()
def solution(hidden_states, w_qkv, w_o, num_heads, softmax_scale=None, causal=False, cp_group=None, pp_group=None):
    staged = pp_group is not None and dist.get_world_size(pp_group) > 1
    stage = dist.get_rank(pp_group) if staged else 0
    last = not staged or stage == dist.get_world_size(pp_group) - 1
    if stage > 0:
        x = torch.empty_like(hidden_states)
        dist.recv(x, src=dist.get_global_rank(pp_group, stage - 1))
    else:
        x = hidden_states
    head_dim = w_qkv.shape[0] // 3 // num_heads
    B, S, _ = x.shape
    qkv = (x @ w_qkv.t()).view(B, S, 3, num_heads, head_dim)
    q, k, v = (qkv[:, :, i].contiguous() for i in range(3))
    context = ring_attention(q, k, v, softmax_scale, causal, cp_group)
    out = context.reshape(B, S, num_heads * head_dim) @ w_o.t()
    if not last:
        dist.send(out, dst=dist.get_global_rank(pp_group, stage + 1))
    return out


PROBLEM = Problem(
    id=56,
    make_inputs=make_inputs,
    solution=solution,
    slack=projection_slack,
    allows_world_size=lambda W: W == 1 or (W >= 2 and W % 2 == 0),
)
