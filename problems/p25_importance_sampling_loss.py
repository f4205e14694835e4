"""25 importance_sampling_loss: LM-head cross-entropy plus an importance-sampling policy-gradient loss (xorl/Tinker
GRPO-style), with a global valid-token count and globally reduced metrics.

Interface as PKB: ``solution(hidden_states (M, N) D, weight (V=32000, N) D, labels (M,) int64, old_logprobs (M,) D,
advantages (M,) D, ignore_index = -100) -> (loss 0-d fp32, None, per_token_logprobs (M,) D, per_token_loss (M,) D,
metrics (5,) fp32)``. logits = hidden @ weight^T (D); ce per token (0 where ignored); new_lp = -ce; n = max(global
valid count, 1); delta = clamp(new_lp - old_lp, -20, 20) (0 where ignored); ratio = exp(delta); pg = -(ratio * adv)
masked; loss = sum(pg)/n (+ surrogate - surrogate); metrics = [mean ratio, min ratio, max ratio, mean k3 =
ratio - delta - 1, mean ce]. Seven scalar all_reduces on WORLD, in order: count (SUM, fp32), pg, ratio (SUM), min
(MIN), max (MAX), k3, ce (SUM). Every tensor is rank-specific (each rank has its own LM head).

Decisions (spec Pitfalls):
- Degenerate values: with PKB's unit-normal weight and old log-probs, ce ~ 130, delta clamps at -20 and the loss,
  per-token loss, ratio metrics are ~1e-9 (zeros pass). Here weight = normal / sqrt(N) (logits ~ N(0, 1), ce ~ log V),
  old_logprobs = -(log V + 1/2) + a per-rank shift in [-1, 1] + 0.5 * normal (an old policy near the new one, so
  delta ~ N(-shift, 1.25), never clamped), and advantages = normal + a per-rank offset of magnitude [0.25, 2] with
  a sign shared by all ranks (so the mean policy gradient is O(1)). Every output is then far above atol, and the
  local (no communication) metrics differ from the global ones.
- Masking is exercised: about 1/8 of the labels are ignore_index, so the valid count n is not W * M.
- Reductions: the D sums (pg, ratio, k3, ce) are reduced in fp32 and rounded once to D (a canonical order); loss
  and the three mean metrics allow 3 * W * 2^-8 * |value| more than atol = rtol = 1e-2, covering bf16 NCCL sums in
  any order (the CE sum, ~11 per token, was order-sensitive in PKB). MIN/MAX are exact.
- Per-token rounding: new_lp ~ -11 is rounded to bf16 (spacing 2^-4); any other GEMM or log-softmax order can round
  a token's log-prob one step differently, which changes its ratio by up to e^(2^-4) - 1 = 6.4%. The check
  (``compare``) therefore allows, per token of per_token_loss, (e^s - 1) * |value| more, s being the D spacing of
  that token's expected log-prob, and the same (with the largest s) for min and max ratio, which are compared
  relatively (atol 0: the minimum ratio is ~0.01). An fp64 implementation, or fp32 logits, pass; zeros, inputs,
  a wrong clamp or no communication fail.
- V = 32000 as in PKB; with ``ctx.reduced`` (CPU development runs) V = 1024 so the (M x N) @ (N x V) GEMM fits a
  CPU world. Slot 1 of the result is None, compared by equality.
"""

import math

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems._elementwise_close import sequence_mismatch, tensor_mismatch
from problems.base import InputContext, Problem

VOCAB = 32000
VOCAB_REDUCED = 1024
IGNORE_INDEX = -100
ATOL = RTOL = 1e-2


def make_inputs(ctx: InputContext):
    M, N = ctx.M, ctx.N
    V = VOCAB_REDUCED if ctx.reduced else VOCAB
    dev, D = ctx.device, ctx.dtype
    ctx.seed("shared")
    sign = 1.0 if torch.rand(()).item() < 0.5 else -1.0  # the advantages' common direction
    ctx.seed(ctx.rank)
    hidden_states = torch.randn(M, N, dtype=D, device=dev)
    weight = (torch.randn(V, N, device=dev) / math.sqrt(N)).to(D)
    labels = torch.randint(0, V, (M,), dtype=torch.int64, device=dev)
    labels[torch.rand(M, device=dev) < 0.125] = IGNORE_INDEX
    shift = 2.0 * torch.rand((), device=dev) - 1.0
    old_logprobs = (-(math.log(V) + 0.5) + shift + 0.5 * torch.randn(M, device=dev)).to(D)
    offset = sign * (0.25 + 1.75 * torch.rand((), device=dev))
    advantages = (offset + torch.randn(M, device=dev)).to(D)
    return hidden_states, weight, labels, old_logprobs, advantages, IGNORE_INDEX


def _global_sum(local: torch.Tensor) -> torch.Tensor:
    """All-reduce (SUM) of a 0-d D sum, accumulated in fp32 and rounded once to D."""
    total = local.float()
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    return total.to(local.dtype)


def solution(hidden_states, weight, labels, old_logprobs, advantages, ignore_index: int = -100):
    logits = F.linear(hidden_states, weight)  # (M, V), rounded to D
    ce = F.cross_entropy(logits.float(), labels, ignore_index=ignore_index, reduction="none").to(logits.dtype)
    new_lp = -ce
    valid = labels != ignore_index
    zero = torch.zeros_like(new_lp)

    n_valid_local = valid.sum().float()
    n = n_valid_local.clone()
    dist.all_reduce(n, op=dist.ReduceOp.SUM)
    n = n.clamp(min=1.0)

    delta = torch.where(valid, new_lp - old_logprobs, zero).clamp(-20.0, 20.0)
    ratio = torch.exp(delta)
    weighted = torch.where(valid, ratio * advantages, zero)
    per_token_loss = -weighted
    true_pg = _global_sum(per_token_loss.sum()) / n
    surrogate = (weighted * ce).sum() / n  # local only: it shapes gradients, its value cancels
    loss = true_pg + surrogate - surrogate

    ratio_mean = _global_sum(torch.where(valid, ratio, zero).sum()) / n
    if n_valid_local > 0:
        min_ratio, max_ratio = ratio[valid].min(), ratio[valid].max()
    else:
        min_ratio = torch.tensor(float("inf"), dtype=ratio.dtype, device=ratio.device)
        max_ratio = torch.tensor(float("-inf"), dtype=ratio.dtype, device=ratio.device)
    dist.all_reduce(min_ratio, op=dist.ReduceOp.MIN)
    dist.all_reduce(max_ratio, op=dist.ReduceOp.MAX)
    k3_mean = _global_sum(torch.where(valid, ratio - delta - 1.0, zero).sum()) / n
    entropy_mean = _global_sum(torch.where(valid, ce, zero).sum()) / n
    metrics = torch.stack([m.float() for m in (ratio_mean, min_ratio, max_ratio, k3_mean, entropy_mean)])
    return loss, None, new_lp, per_token_loss, metrics


# --- the check ------------------------------------------------------------------------------------------------------


def _spacing(values: torch.Tensor) -> torch.Tensor:
    """The distance between adjacent values of values.dtype at each |value| (0 at 0), in float64."""
    _, exponent = torch.frexp(values.detach().cpu().double().abs())
    spacing = torch.ldexp(torch.ones_like(exponent, dtype=torch.float64), exponent - 1) * torch.finfo(values.dtype).eps
    return torch.where(values.detach().cpu() == 0, torch.zeros_like(spacing), spacing)


def compare(expected, actual, world_size: int) -> str | None:
    message = sequence_mismatch(actual, 5)
    if message:
        return message
    loss, _, new_lp, per_token_loss, metrics = expected
    if actual[1] is not None:
        return f"output[1]: expected None, got {type(actual[1]).__name__}"
    # Reduction order of W bf16 sums (3x margin for partial sums of mixed sign in the policy-gradient sum).
    unit = torch.finfo(new_lp.dtype).eps / 2 if world_size > 1 else 0.0
    order = 3.0 * world_size * unit
    # One-step different rounding of a token's log-prob, as it propagates through exp.
    flip = torch.expm1(_spacing(new_lp))
    worst_flip = flip.max().item() if flip.numel() else 0.0
    m = metrics.detach().cpu().double().abs()
    metric_atol = torch.tensor([ATOL, 0.0, 0.0, ATOL, ATOL], dtype=torch.float64)
    metric_extra = torch.stack([order * m[0], worst_flip * m[1], worst_flip * m[2], order * m[3], order * m[4]])
    return (
        tensor_mismatch(loss, actual[0], ATOL, RTOL, order * abs(loss.item()), "output[0] (loss)")
        or tensor_mismatch(new_lp, actual[2], ATOL, RTOL, 0.0, "output[2] (per_token_logprobs)")
        or tensor_mismatch(
            per_token_loss,
            actual[3],
            ATOL,
            RTOL,
            flip * per_token_loss.detach().cpu().double().abs(),
            "output[3] (per_token_loss)",
        )
        or tensor_mismatch(
            metrics,
            actual[4],
            0.0,
            RTOL,
            metric_atol + metric_extra,
            "output[4] (metrics: ratio mean, min, max, k3 mean, entropy mean)",
        )
    )


PROBLEM = Problem(id=25, make_inputs=make_inputs, solution=solution, compare=compare, atol=ATOL, rtol=RTOL)
