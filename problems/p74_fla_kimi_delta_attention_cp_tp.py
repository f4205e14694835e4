"""74 fla_kimi_delta_attention_cp_tp: Kimi Delta Attention forward, context parallel by a sequence all-gather, plus
PKB's "TP" all-reduce of the full outputs of two CP groups.

Interface as PKB: ``solution(q, k, v, g, beta, a_log, dt_bias, cp_group=None, tp_group=None) -> (1, 64, 16, 128) D``.
For even W >= 4 the builder creates the TP pairs {2c, 2c+1} first, then the strided CP groups {t, t+2, ...}, and
passes each rank its own two groups; otherwise it passes the world group as cp_group and None as tp_group. a_log and
dt_bias are always bf16. The TP quirk is kept: TP partners sum two unrelated CP groups' outputs (in D, one rounding)
and return identical tensors.

Decisions (spec Pitfalls):
- Weak tolerance: with PKB's inputs the outputs have std ~0.006, so zeros pass atol = 1e-2 almost everywhere, and
  the gates decay the state within a few tokens, so a CP rank that skips the gather is wrong only on its first rows.
  The recurrence is linear in v, so we draw v = 16 * N(0, 1) (exact in bf16) for outputs of std ~0.5, and shift the
  gate input, g = N(0, 1) - 5, so that decays are ~0.98 and the state carries history across whole CP blocks. The
  interface and the semantics are unchanged; zeros and no-communication answers now fail by far.
- Order: the reference recurrence is fp32 and sequential; the only bf16 sum is the two-operand TP all-reduce, which
  rounds once in any order, so no slack is needed.
- The CP rank 0 block depends on no other rank's tokens (causality): without TP (W = 2, 3, 5...) a no-communication
  answer is right on CP rank 0 and wrong on every later CP block.
- Reduced (CPU development only): L = 16 local tokens, H = 4 heads, K = V = 64 instead of 64, 16, 128, 128; the
  sequential Python loop at full size is too slow for a shared CPU world.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems._delta_rule_cp import gated_delta_rule
from problems.base import InputContext, Problem

LOWER_BOUND = -5.0


def _groups(ctx: InputContext):
    W = ctx.world_size
    if W >= 4 and W % 2 == 0:
        tp_groups = [ctx.new_group([2 * c, 2 * c + 1]) for c in range(W // 2)]
        cp_groups = [ctx.new_group(list(range(t, W, 2))) for t in range(2)]
        return cp_groups[ctx.rank % 2], tp_groups[ctx.rank // 2]
    return dist.group.WORLD, None


def make_inputs(ctx: InputContext):
    cp_group, tp_group = _groups(ctx)
    L, H, K, V = (16, 4, 64, 64) if ctx.reduced else (64, 16, 128, 128)
    ctx.seed(ctx.rank)
    dev, D = ctx.device, ctx.dtype
    q = torch.randn(1, L, H, K, dtype=D, device=dev)
    k = torch.randn(1, L, H, K, dtype=D, device=dev)
    v = torch.randn(1, L, H, V, dtype=D, device=dev) * 16
    g = torch.randn(1, L, H, K, dtype=D, device=dev) - 5
    beta = torch.randn(1, L, H, dtype=D, device=dev)
    a_log = torch.linspace(-0.1, 0.1, H, dtype=torch.bfloat16, device=dev)
    dt_bias = torch.linspace(-0.1, 0.1, H * K, dtype=torch.bfloat16, device=dev)
    return q, k, v, g, beta, a_log, dt_bias, cp_group, tp_group


def _gather_sequence(x: torch.Tensor, group, size: int) -> torch.Tensor:
    """Concatenate the CP members' tensors along dim 1 (sequence moved to the front for the gather, as PKB)."""
    front = x.transpose(0, 1).contiguous()
    out = torch.empty((size * front.shape[0],) + front.shape[1:], dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(out, front, group=group)
    return out.transpose(0, 1).contiguous()


def kda_forward(q, k, v, g, beta, a_log, dt_bias) -> torch.Tensor:
    """KDA on the full sequence, fp32; returns (B, T, H, V) in q's dtype."""
    H, K = q.shape[2], q.shape[3]
    gate = a_log.float().exp().view(H, 1) * (g.float() + dt_bias.float().view(H, K))
    decay = torch.exp(LOWER_BOUND * torch.sigmoid(gate))
    qn = F.normalize(q.float(), dim=-1, eps=1e-12) * K**-0.5
    kn = F.normalize(k.float(), dim=-1, eps=1e-12)
    return gated_delta_rule(qn, kn, v, decay, torch.sigmoid(beta.float())).to(q.dtype)


@torch.no_grad()
def solution(q, k, v, g, beta, a_log, dt_bias, cp_group=None, tp_group=None):
    cp_group = dist.group.WORLD if cp_group is None else cp_group
    cp_size, cp_rank = dist.get_world_size(cp_group), dist.get_rank(cp_group)
    local = q.shape[1]
    if cp_size > 1:
        q, k, v, g, beta = (_gather_sequence(x, cp_group, cp_size) for x in (q, k, v, g, beta))
    out = kda_forward(q, k, v, g, beta, a_log, dt_bias)
    if tp_group is not None and dist.get_world_size(tp_group) > 1:
        dist.all_reduce(out, op=dist.ReduceOp.SUM, group=tp_group)
    if cp_size == 1:
        return out
    return out[:, cp_rank * local : (cp_rank + 1) * local].contiguous()


PROBLEM = Problem(id=74, make_inputs=make_inputs, solution=solution)
