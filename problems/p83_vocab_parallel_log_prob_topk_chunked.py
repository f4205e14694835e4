"""83 vocab_parallel_log_prob_topk_chunked: problem 82 processed in chunks of B*chunk_size flattened tokens, one
all-to-all and one all-gather per chunk.

Interface as PKB: ``solution(vocab_parallel_logits (B, S, V/W) D, target (B, S) int64, tp_group=None, top_k=None,
top_p=1.0, chunk_size=1) -> (B, S) fp32``, identical on every rank. Sizes as problem 82;
chunk_size = min(roundup(max(W, S div 4), W), S); target[n] = (19n + 5 + trial) mod 256; top_k = 10, top_p = 0.9.
Chunks are blocks of B*chunk_size consecutive flattened tokens (batch-major), each split evenly over the ranks.

Decisions (spec Pitfalls): as problem 82 (``problems/_vocab_topk_logprob.py``): the target boost is +3 instead of
+8 so the outputs are not almost all exactly 0, and rows whose top-p cumulative sums come within 0.02 of the cut
are redrawn so that bf16 and fp32 filters agree. Chunking is invisible at the defaults (one chunk at W = 8, M =
1024) but shows for W < 8 or larger M (W = 2, M = 1024 gives 4 chunks); the tests cover several chunks.
W must divide 256.
"""

import torch
import torch.distributed as dist

from problems._vocab_topk_logprob import (
    TOP_K,
    TOP_P,
    allows,
    batch_and_seq,
    chunk_size_for,
    filter_logits,
    make_logits,
    shard_to_tokens,
)
from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    B, S = batch_and_seq(ctx.M, ctx.world_size)
    n = torch.arange(B * S, device=ctx.device)
    target = ((19 * n + 5 + ctx.trial) % 256).view(B, S)
    return make_logits(ctx, target), target, None, TOP_K, TOP_P, chunk_size_for(S, ctx.world_size)


@torch.no_grad()
def solution(vocab_parallel_logits, target, tp_group=None, top_k=None, top_p=1.0, chunk_size=1):
    W, rank = dist.get_world_size(tp_group), dist.get_rank(tp_group)
    B, S, Vl = vocab_parallel_logits.shape
    T, CT = B * S, B * max(1, chunk_size)
    if T % W or CT % W:
        raise ValueError(f"batch * seq_len = {T} and batch * chunk_size = {CT} must be divisible by {W}")
    logits, tokens = vocab_parallel_logits.reshape(T, Vl), target.reshape(T)
    results = []
    for start in range(0, T, CT):
        c = min(CT, T - start)
        cl = c // W
        chunk = logits[start : start + c]
        full = shard_to_tokens(chunk, W, tp_group) if W > 1 else chunk
        filtered, _ = filter_logits(full, top_k, top_p)
        mine = tokens[start + rank * cl : start + (rank + 1) * cl]
        log_probs = torch.log_softmax(filtered.float(), dim=-1).gather(1, mine.view(-1, 1)).view(cl)
        parts = [torch.empty_like(log_probs) for _ in range(W)]
        dist.all_gather(parts, log_probs, group=tp_group)
        results.extend(parts)
    return torch.cat(results).view(B, S)


PROBLEM = Problem(id=83, make_inputs=make_inputs, solution=solution, allows_world_size=allows)
