"""75 fla_gated_deltanet_cp: Gated DeltaNet forward under Ulysses context parallelism (sequence shard -> head shard by
all-to-all, full-sequence recurrence on the local heads, and back).

Interface as PKB: ``solution(q, k, v, gate, beta, a_log, dt_bias, group=None) -> (1, 64, H, 512) D`` with
H = roundup(6, W) heads; a_log and dt_bias are always bf16 and hold only rank r's head slice [r*H/W, (r+1)*H/W) of
the shared vectors; beta arrives already sigmoided (drawn and squashed in bf16, then cast to D); the norms use eps 1e-6.

Decisions (spec Pitfalls):
- Weak tolerance: with PKB's inputs the outputs have std ~0.0025, so zeros pass atol = 1e-2 on >99% of elements.
  The recurrence is linear in v, so we draw v = 16 * N(0, 1) (exact in bf16), and we shift the gate input,
  gate = N(0, 1) - 3, so that the per-token decay is ~0.95 and the state carries history across rank blocks.
  Outputs then have std ~0.3: zeros and a sequence-local (no all-to-all) answer fail by far. Interface and
  semantics are unchanged.
- No bf16 reduction happens across ranks (the all-to-alls only move data), so the default tolerance is fair.
- W = 1: there is nothing to exchange; the recurrence runs on the rank's 64 tokens with all 6 heads.
- Reduced (CPU development only): L = 16 local tokens, K = 64, V = 128 instead of 64, 256, 512 (the sequential
  Python loop at full size is too slow for a shared CPU world); the head rule is unchanged.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems._delta_rule_cp import gated_delta_rule
from problems.base import InputContext, Problem


def num_heads(W: int) -> int:
    return -(-6 // W) * W


def make_inputs(ctx: InputContext):
    W, r = ctx.world_size, ctx.rank
    H = num_heads(W)
    Hl = H // W
    L, K, V = (16, 64, 128) if ctx.reduced else (64, 256, 512)
    ctx.seed(r)
    dev, D = ctx.device, ctx.dtype
    q = torch.randn(1, L, H, K, dtype=D, device=dev)
    k = torch.randn(1, L, H, K, dtype=D, device=dev)
    v = torch.randn(1, L, H, V, dtype=D, device=dev) * 16
    gate = torch.randn(1, L, H, dtype=D, device=dev) - 3
    beta = torch.sigmoid(torch.randn(1, L, H, dtype=torch.bfloat16, device=dev)).to(D)
    a_log = torch.linspace(0.0, 0.2, H, dtype=torch.bfloat16, device=dev)[r * Hl : (r + 1) * Hl].contiguous()
    dt_bias = torch.linspace(-0.1, 0.1, H, dtype=torch.bfloat16, device=dev)[r * Hl : (r + 1) * Hl].contiguous()
    return q, k, v, gate, beta, a_log, dt_bias, None


def _sequence_to_heads(x: torch.Tensor, W: int, group) -> torch.Tensor:
    """(B, L, H, d) sequence shard -> (B, W*L, H/W, d): all ranks' tokens for this rank's head block."""
    B, L, H, d = x.shape
    send = x.reshape(B, L, W, H // W, d).permute(2, 0, 1, 3, 4).contiguous()  # head block j goes to rank j
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=group)
    return recv.permute(1, 0, 2, 3, 4).reshape(B, W * L, H // W, d)  # stacked in source-rank order


def _heads_to_sequence(x: torch.Tensor, W: int, group) -> torch.Tensor:
    """(B, W*L, Hl, d) head shard -> (B, L, W*Hl, d): this rank's tokens for all heads."""
    B, S, Hl, d = x.shape
    send = x.reshape(B, W, S // W, Hl, d).permute(1, 0, 2, 3, 4).contiguous()  # token block j goes to rank j
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=group)
    return recv.permute(1, 2, 0, 3, 4).reshape(B, S // W, W * Hl, d)  # head blocks in source-rank order


def gated_deltanet(q, k, v, gate, beta, a_log, dt_bias) -> torch.Tensor:
    """Gated DeltaNet over the full sequence for the given heads, fp32; returns q's dtype."""
    K = q.shape[-1]
    qn = F.normalize(q.float(), dim=-1, eps=1e-6) * K**-0.5
    kn = F.normalize(k.float(), dim=-1, eps=1e-6)
    decay = torch.exp(-a_log.float().exp() * F.softplus(gate.float() + dt_bias.float()))
    return gated_delta_rule(qn, kn, v, decay.unsqueeze(-1), beta).to(q.dtype)


@torch.no_grad()
def solution(q, k, v, gate, beta, a_log, dt_bias, group=None):
    W = dist.get_world_size(group)
    if W == 1:
        return gated_deltanet(q, k, v, gate, beta, a_log, dt_bias)
    q, k, v = (_sequence_to_heads(x, W, group) for x in (q, k, v))
    gate, beta = (_sequence_to_heads(x.unsqueeze(-1), W, group).squeeze(-1) for x in (gate, beta))
    out = gated_deltanet(q, k, v, gate, beta, a_log, dt_bias)
    return _heads_to_sequence(out, W, group).contiguous()


PROBLEM = Problem(id=75, make_inputs=make_inputs, solution=solution)
