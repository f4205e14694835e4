"""39 ulysses_attention_e2e: end-to-end Ulysses attention block (QKV projection, q and k/v all-to-alls, eager
attention, reverse all-to-all, output projection).

Interface as PKB: ``solution(hidden_states (B, S, 512), w_qkv (1536, 512), w_o (512, 512), group=None,
num_heads=8, causal=False) -> (B, S, 512)`` with B = max(1, M // 64), T = max(1, N // 64), S = max(1, T // W),
head size 64; rank-specific. Three list-form ``dist.all_to_all`` calls: q (heads scattered), k/v interleaved per
head (2h "heads" per chunk), and the attention output (sequence scattered, heads gathered). W = 1 runs the same math
without communication.

Decisions (spec Pitfalls):
- Kept as PKB, quirk included: the eager attention multiplies over the last two dims of (batch, seq, heads, dim)
  tensors, so it attends across the h = 8/W local heads of one token, not across tokens. Every rank's output then
  depends only on its own inputs and the three all-to-alls are exact round trips: a purely local computation
  (same bf16 GEMMs, no collective) is a correct answer by these semantics: a rank that skips the exchanges and
  keeps its own pieces reproduces the reference bit for bit (tests/problems). The self-check's no-communication
  null zeros the pieces peers would send, so it fails here; the exemption below covers nulls that keep them.
  This is inherent to the workload and must be kept for candidates to be judged as in PKB.
- Weights are rank-specific as in PKB, but scaled by 1/sqrt(512) (PKB: unscaled randn). Unscaled, outputs have
  std ~512 and the head softmax is a hard max, so 1-ulp GEMM differences and bf16 score ties decide elements and
  reordered-but-correct GEMMs fail. Scaled, q/k/v and scores have std ~1, the softmax over heads is soft, and
  outputs have std ~0.5-1, where atol = rtol = 1e-2 tolerates any accumulation order (the test checks an fp32
  implementation) while zeros, the input or a scrambled exchange fail.
- ``causal`` (False in PKB) is implemented as described: a strictly-upper-triangular mask over the (heads x heads)
  scores, applied only when the gathered sequence is longer than 1.
"""

import math

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems._ulysses import (
    HEAD_DIM,
    HEADS,
    attention_dims,
    check_heads_world_size,
    gather_heads_scatter_seq,
    gather_seq_scatter_heads,
)
from problems.base import InputContext, Problem

WIDTH = HEADS * HEAD_DIM  # model width 512, independent of N


def make_inputs(ctx: InputContext):
    check_heads_world_size(ctx.world_size)
    B, T = attention_dims(ctx.M, ctx.N)
    S = max(1, T // ctx.world_size)
    ctx.seed(ctx.rank)  # rank-specific, weights included (as PKB)
    scale = 1.0 / math.sqrt(WIDTH)
    hidden_states = torch.randn(B, S, WIDTH, device=ctx.device).to(ctx.dtype)
    w_qkv = (torch.randn(3 * WIDTH, WIDTH, device=ctx.device) * scale).to(ctx.dtype)
    w_o = (torch.randn(WIDTH, WIDTH, device=ctx.device) * scale).to(ctx.dtype)
    return hidden_states, w_qkv, w_o, None, HEADS, False


def eager_attention(q, k, v, causal: bool):
    """PKB's eager attention on (batch, seq, heads, dim) tensors: its products run over (heads x dim)."""
    scores = torch.matmul(q, k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
    if causal and q.shape[1] > 1:
        mask = torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v)


def solution(
    hidden_states: torch.Tensor,
    w_qkv: torch.Tensor,
    w_o: torch.Tensor,
    group=None,
    num_heads: int = 8,
    causal: bool = False,
) -> torch.Tensor:
    world_size = dist.get_world_size(group)
    if num_heads % world_size:
        raise ValueError(f"W = {world_size} must divide num_heads = {num_heads}")
    B, S, _ = hidden_states.shape
    head_dim = w_qkv.shape[0] // (3 * num_heads)
    qkv = F.linear(hidden_states, w_qkv).view(B, S, 3, num_heads, head_dim)
    q, k, v = qkv.unbind(dim=2)
    if world_size == 1:
        attn = eager_attention(q, k, v, causal)
    else:
        local_heads = num_heads // world_size
        q = gather_seq_scatter_heads(q, seq_dim=1, head_dim=2, group=group)
        # k and v interleaved per head (index 2*head + {0: k, 1: v}) travel in one all-to-all of 2h "heads".
        kv = torch.stack([k, v], dim=3).reshape(B, S, 2 * num_heads, head_dim)
        kv = gather_seq_scatter_heads(kv, seq_dim=1, head_dim=2, group=group)
        kv = kv.view(B, kv.shape[1], local_heads, 2, head_dim)
        attn = eager_attention(q, kv[:, :, :, 0], kv[:, :, :, 1], causal)
        attn = gather_heads_scatter_seq(attn, head_dim=2, seq_dim=1, group=group)
    return F.linear(attn.reshape(B, S, num_heads * head_dim), w_o)


PROBLEM = Problem(
    id=39,
    make_inputs=make_inputs,
    solution=solution,
    nulls_that_pass={
        "nocomm": "PKB's attention mixes the heads of one token, so the all-to-alls are "
        "exact round trips (see the docstring)"
    },
    allows_world_size=lambda W: W >= 1 and HEADS % W == 0,
)
