"""Shared pieces of problems 82-84 (NeMo-RL vocab-parallel token log-probs under top-k / top-p filtering).

Sizes, the input builder (with the margin rule that keeps the top-p boundary away from rounding), the
vocab-shard <-> token-block all-to-alls and the filter itself, in the run dtype as NeMo-RL does it.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext

VOCAB = 256
TOP_K = 10
TOP_P = 0.9
# Added (in D) to the target's logit. PKB adds 8.0, which makes almost every log-prob exactly 0 (see the problems'
# docstrings); +3 keeps the target in the top-k set most of the time without letting it take all the mass.
TARGET_BOOST = 3.0
# Minimum distance, in fp32, between every top-p cumulative sum of a row and the cut 1 - top_p. bf16 softmax and
# cumsum move those sums by < 0.003, so a filter in bf16 (any scan order) or fp32 keeps exactly the same tokens.
TOP_P_MARGIN = 0.02


def roundup(x: int, m: int) -> int:
    return -(-x // m) * m


def batch_and_seq(M: int, W: int) -> tuple[int, int]:
    return max(1, min(M // 512, 4)), roundup(max(W, min(M // 128, 32)), W)


def chunk_size_for(S: int, W: int) -> int:
    return min(roundup(max(W, S // 4), W), S)


def allows(W: int) -> bool:
    return W >= 1 and VOCAB % W == 0


def top_p_margin(rows: torch.Tensor, top_k: int = TOP_K, top_p: float = TOP_P) -> torch.Tensor:
    """Per row, the smallest |cumsum - (1 - top_p)| of the top-k-masked ascending softmax, in fp32; 0 where two
    equal logits straddle the cut (which of them survives would depend on the sort's tie order)."""
    s = rows.float().sort(dim=-1).values
    s = s.masked_fill(s < s[:, rows.shape[-1] - top_k : rows.shape[-1] - top_k + 1], float("-inf"))
    cum = s.softmax(dim=-1).cumsum(dim=-1)
    margin = (cum - (1 - top_p)).abs().min(dim=-1).values
    first_kept = (cum > 1 - top_p).int().argmax(dim=-1, keepdim=True).clamp_min(1)
    straddle = s.gather(1, first_kept) == s.gather(1, first_kept - 1)
    return margin.masked_fill(straddle.view(-1), 0.0)


def make_logits(ctx: InputContext, target: torch.Tensor) -> torch.Tensor:
    """Rank r's vocab shard (B, S, V/W) of full-vocab logits drawn identically on every rank.

    Rows are standard normal with TARGET_BOOST added at the target, redrawn until the top-p boundary is at least
    TOP_P_MARGIN away from every cumulative sum (a shared generator, so every rank redraws the same rows).
    """
    B, S = target.shape
    gen = ctx.generator("shared logits")
    rows = torch.empty(B * S, VOCAB, dtype=ctx.dtype, device=ctx.device)
    todo = torch.arange(B * S, device=ctx.device)
    for _ in range(1000):
        fresh = torch.randn(len(todo), VOCAB, generator=gen, device=ctx.device).to(ctx.dtype)
        fresh[torch.arange(len(todo), device=ctx.device), target.reshape(-1)[todo]] += TARGET_BOOST
        rows[todo] = fresh
        todo = todo[top_p_margin(fresh) < TOP_P_MARGIN]
        if len(todo) == 0:
            break
    Vl = VOCAB // ctx.world_size
    return rows[:, ctx.rank * Vl : (ctx.rank + 1) * Vl].reshape(B, S, Vl).contiguous()


def shard_to_tokens(logits: torch.Tensor, W: int, group) -> torch.Tensor:
    """(n, V/W) vocab shard of n tokens -> (n/W, V): full-vocab rows of this rank's token block."""
    n, Vl = logits.shape
    send = logits.reshape(W, n // W, Vl).contiguous()  # token block j goes to rank j
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=group)
    return recv.permute(1, 0, 2).reshape(n // W, W * Vl)  # vocab shards in source-rank order


def tokens_to_shard(values: torch.Tensor, W: int, group) -> torch.Tensor:
    """(n/W, V) rows of this rank's token block -> (n, V/W): every token's rows restricted to this rank's shard."""
    m, V = values.shape
    send = values.reshape(m, W, V // W).permute(1, 0, 2).contiguous()  # vocab block j goes to rank j
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=group)
    return recv.reshape(W * m, V // W)  # token blocks in source-rank order


def filter_logits(logits: torch.Tensor, top_k, top_p) -> tuple[torch.Tensor, torch.Tensor]:
    """NeMo-RL's top-k / top-p filter in the logits' dtype: (filtered logits with -inf, keep mask), vocab order."""
    use_k = top_k is not None and top_k > 0
    use_p = top_p is not None and top_p < 1.0
    if not use_k and not use_p:
        return logits, torch.ones_like(logits, dtype=torch.bool)
    values, order = torch.sort(logits, dim=-1)  # ascending
    if use_k:
        threshold = values[:, logits.shape[-1] - top_k].unsqueeze(-1)
        values = values.masked_fill(values < threshold, float("-inf"))
    if use_p:
        cumulative = values.softmax(dim=-1).cumsum(dim=-1)  # both in D, as NeMo-RL
        drop = cumulative <= 1 - top_p
        drop[:, -1] = False  # the largest entry always survives
        values = values.masked_fill(drop, float("-inf"))
    filtered = torch.empty_like(logits).scatter_(-1, order, values)
    return filtered, filtered != float("-inf")
