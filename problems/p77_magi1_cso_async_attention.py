"""77 magi1_cso_async_attention: MAGI-1 context-shuffle-overlap attention. K/V are redistributed by head block with
one all-to-all, then each of the R query ranges goes sequence -> heads by all-to-all, attends to its range's K/V,
and comes back; the next range's query exchange rides along with the previous range's output exchange.

Interface as PKB: ``solution(query, key_value, k_ranges, cp_shuffle_num, clip_token_nums=None, group=None)`` ->
(R*spb, Hq, 128) in the attention dtype A (bf16 for fp16 and bf16 runs, as PKB's builder), rank-specific. Sizes:
W <= 4: Hq = 24, C = 12150; W > 4: Hq = 48, C = 21600; Hq -> W*max(1, Hq div W) when W does not divide it;
Hkv = 8 unless 8 and W divide neither way (then W); R = 4, spb = ceil(C/W). key_value is [key | value] on the last
dim; k_ranges row i is [i*C, (i+1)*C] on the device. The seven all-to-alls come in PKB's order
(kv, q0, q1, [q2|out0], [q3|out1], out2, out3).

Decisions (spec Pitfalls):
- Weak tolerance: with standard-normal values the outputs are averages of ~C random numbers (std ~0.012) and
  zeros pass on ~60% of the elements. Attention is linear in V, so we draw value = 16 * N(0, 1) (exact in bf16):
  outputs have std ~0.2 at full size, zeros fail, and the query-dependent part of the weighted average is itself
  far above atol, so "mean of V" shortcuts fail too. Query and key stay standard normal (logits of std 1), so bf16
  flash attention, fp32 math and the reference stay well within tolerance of each other.
- Clipping is kept: when W*spb > C, the tail of rank W-1's block of every range is dropped from K/V, while its
  queries are still answered.
- Reduced (CPU development only): C = 94 (W <= 4) or 168 (W > 4) tokens per range instead of 12150 / 21600, so
  W = 3 and 4 still clip; heads and head dim follow the spec.
"""

import math

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.base import InputContext, Problem

HEAD_DIM = 128
RANGES = 4


def sizes(W: int, reduced: bool = False):
    """(query heads, kv heads, chunk_token_nums C) for world size W."""
    Hq, C = (24, 12150) if W <= 4 else (48, 21600)
    if reduced:
        C = 94 if W <= 4 else 168
    if Hq % W:
        Hq = W * max(1, Hq // W)
    Hkv = 8 if (8 % W == 0 or W % 8 == 0) else W
    return Hq, Hkv, C


def attention_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.bfloat16 if dtype in (torch.float16, torch.bfloat16) else dtype


def make_inputs(ctx: InputContext):
    W = ctx.world_size
    Hq, Hkv, C = sizes(W, ctx.reduced)
    spb = math.ceil(C / W)
    tokens = RANGES * spb
    A = attention_dtype(ctx.dtype)
    ctx.seed(ctx.rank)
    query = torch.randn(tokens, Hq, HEAD_DIM, dtype=A, device=ctx.device)
    key = torch.randn(tokens, Hkv, HEAD_DIM, dtype=A, device=ctx.device)
    value = torch.randn(tokens, Hkv, HEAD_DIM, dtype=A, device=ctx.device) * 16
    key_value = torch.cat([key, value], dim=-1)
    k_ranges = torch.tensor([[i * C, (i + 1) * C] for i in range(RANGES)], dtype=torch.int64, device=ctx.device)
    return query, key_value, k_ranges, RANGES, C, None


def _a2a(send: torch.Tensor, group) -> torch.Tensor:
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=group, async_op=True).wait()
    return recv


@torch.no_grad()
def solution(query, key_value, k_ranges, cp_shuffle_num, clip_token_nums=None, group=None):
    W, R = dist.get_world_size(group), cp_shuffle_num
    tokens, Hq, d = query.shape
    spb, Hl = tokens // R, Hq // W
    clip = clip_token_nums or W * spb

    # 1. K/V redistribution: every rank's tokens for this rank's KV-head block, reordered range-major and clipped.
    kv = key_value
    if kv.shape[1] < W and W % kv.shape[1] == 0:
        kv = kv.repeat_interleave(W // kv.shape[1], dim=1)
    Hkvl = kv.shape[1] // W
    recv = torch.empty((W, tokens, Hkvl, kv.shape[-1]), dtype=kv.dtype, device=kv.device)
    dist.all_to_all_single(recv, kv.reshape(tokens, W, Hkvl, -1).transpose(0, 1).contiguous(), group=group)
    kv = recv.reshape(W, R, spb, Hkvl, -1).transpose(0, 1).reshape(R, W * spb, Hkvl, -1)[:, :clip]
    kv = kv.reshape(R * clip, Hkvl, -1).repeat_interleave(Hl // Hkvl, dim=1).transpose(0, 1)  # (Hl, R*clip, 2d)
    k_all, v_all = kv[..., :d], kv[..., d:]
    bounds = k_ranges.tolist()

    def query_send(i):  # rank j gets this rank's range-i tokens of head block j: (W, spb, Hl, d)
        return query[i * spb : (i + 1) * spb].reshape(spb, W, Hl, d).transpose(0, 1).contiguous()

    def attend(i, q):  # q: (W*spb, Hl, d), all ranks' range-i tokens for this rank's heads
        lo, hi = bounds[i]
        q, k, v = q.transpose(0, 1), k_all[:, lo:hi], v_all[:, lo:hi]
        if q.is_cuda:
            # 4-D (a batch of one) on the GPU: the fused flash kernel only takes 4-D inputs; 3-D ones fall back to
            # the math path, which materialises the (Hl, L, C) scores (14 GB at full size) and is ~100x slower.
            # On the CPU the 3-D math path stays: the CPU's fused bf16 kernel misses the tolerance (tests/problems).
            out = F.scaled_dot_product_attention(q[None], k[None], v[None])[0]
        else:
            out = F.scaled_dot_product_attention(q, k, v)
        return out.transpose(0, 1).reshape(W, spb, Hl, d).contiguous()  # token block j goes back to rank j

    # 2-4. Pipelined exchanges: q0, q1, then [q_{i+2} | out_i] while they last, then the remaining outputs.
    result = torch.empty_like(query)
    received = {i: _a2a(query_send(i), group).reshape(W * spb, Hl, d) for i in range(min(2, R))}
    for i in range(R):
        out = attend(i, received.pop(i))
        if i + 2 < R:
            both = _a2a(torch.cat([query_send(i + 2), out], dim=-1), group)
            received[i + 2] = both[..., :d].reshape(W * spb, Hl, d)
            back = both[..., d:]
        else:
            back = _a2a(out, group)
        # back[j] holds head block j of this rank's range-i tokens.
        result[i * spb : (i + 1) * spb] = back.transpose(0, 1).reshape(spb, Hq, d)
    return result


PROBLEM = Problem(id=77, make_inputs=make_inputs, solution=solution)
