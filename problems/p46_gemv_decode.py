"""46 gemv_decode: vocab-parallel LM-head GEMV (decode step), local logits all-gathered along the vocabulary.

Interface as PKB: ``solution(hidden_states (Tn, Hd), weight_shard (V/W, Hd), bias_shard (V/W,)) -> (Tn, V)`` in D,
identical on every rank; columns [j*V/W, (j+1)*V/W) come from rank j. Tn = max(1, min(8, M // 1024)),
Hd = max(128, min(N, 4096)), V = round_up(max(M, 1024*W), W). No process group is passed: WORLD is used.

Decisions:
- As in PKB, every rank draws the same full weight (V, Hd) and bias (V,) from a shared seed and keeps its own rows,
  so the shards are slices of one matrix; hidden_states is identical on all ranks.
- Rounding points follow the spec (GEMM rounded to D, then the bias add rounded again). Unscaled randn weights give
  logits of std ~ sqrt(Hd); a fused epilogue that rounds once differs by < 1 bf16 ulp, inside rtol = 1e-2, so the
  default tolerance is kept. No reduction is involved, so the check does not depend on an order of additions.
- Null answers: zeros miss by O(sqrt(Hd)); the local logits alone have shape (Tn, V/W).
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem


def shape(M: int, N: int, W: int) -> tuple[int, int, int]:
    tokens = max(1, min(8, M // 1024))
    hidden = max(128, min(N, 4096))
    vocab = -(-max(M, 1024 * W) // W) * W
    return tokens, hidden, vocab


def make_inputs(ctx: InputContext):
    tokens, hidden, vocab = shape(ctx.M, ctx.N, ctx.world_size)
    local = vocab // ctx.world_size
    rows = slice(ctx.rank * local, (ctx.rank + 1) * local)
    ctx.seed("shared")  # the full matrices are common to all ranks; each keeps its slice
    hidden_states = torch.randn(tokens, hidden, dtype=ctx.dtype, device=ctx.device)
    weight = torch.randn(vocab, hidden, dtype=ctx.dtype, device=ctx.device)
    bias = torch.randn(vocab, dtype=ctx.dtype, device=ctx.device)
    return hidden_states, weight[rows].contiguous(), bias[rows].contiguous()


@torch.no_grad()
def solution(hidden_states: torch.Tensor, weight_shard: torch.Tensor, bias_shard: torch.Tensor) -> torch.Tensor:
    local = hidden_states @ weight_shard.t()  # rounded to D once ...
    local = local + bias_shard  # ... and again after the bias, as in PKB
    parts = [torch.empty_like(local) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, local)
    return torch.cat(parts, dim=1)


PROBLEM = Problem(id=46, make_inputs=make_inputs, solution=solution)
