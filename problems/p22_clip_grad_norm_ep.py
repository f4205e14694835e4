"""22 clip_grad_norm_ep: EP-aware global gradient norm (FSDP + expert-parallel groups), with in-place clipping.

Interface as PKB: ``solution(non_ep_grad_tensors: [ (M, N) D ], ep_grad_tensors: [ (M, N) D ], max_norm = 1.0,
norm_type = 2.0, ep_size = max(1, W // 2), fsdp_group = WORLD, ep_fsdp_group, ep_group) -> 0-d float32``,
identical on every rank. EP grads are first scaled in place by 1/ep_size (when ep_size > 1); the non-EP sum of
squares is all-reduced on fsdp_group, the EP one on ep_fsdp_group then on ep_group (None groups are skipped);
total_norm = (non_ep + ep)^(1/p), and every grad is clipped in place when it exceeds max_norm.

Groups (created by every rank in this order): for even W >= 4, ep_size = W/2, global rank = b * ep_size + e; the EP
groups are the halves {0..W/2-1}, {W/2..W-1} (created first), the EP-FSDP groups the pairs {e, e + W/2}. For W <= 3
and odd W >= 5 the layout is degenerate: ep_group = None and ep_fsdp_group = WORLD, and the 1/ep_size pre-scaling
still applies for odd W >= 5 (ep_size = W // 2).

Decisions (spec Pitfalls):
- Each grad is a normal times its own random scale in [1/2, 2] (``_grad_norm_clip.random_grad``) instead of a unit
  normal, so the norm is not a predictable constant; zeros, the local norm (no communication) and a norm that
  forgets the 1/ep_size factor (for ep_size > 1) fail.
- The EP pre-scaling happens in place before the norm, as in PKB, so it affects the returned value; the final
  clipping is performed but, as in PKB, not compared (only total_norm is returned).
- fp32 accumulation of a few scalars: order effects are negligible, default tolerance kept.
"""

import torch
import torch.distributed as dist

from problems._grad_norm_clip import clip_, grads_device, random_grad, sum_of_powers
from problems.base import InputContext, Problem


def ep_layout(ctx: InputContext):
    """(ep_size, ep_fsdp_group, ep_group) for this rank, creating the sub-groups in the spec's order."""
    W = ctx.world_size
    ep_size = max(1, W // 2)
    if W % 2 or W < 4:
        return ep_size, dist.group.WORLD, None
    ep_groups = [ctx.new_group(range(b * ep_size, (b + 1) * ep_size)) for b in range(2)]
    ep_fsdp_groups = [ctx.new_group([e, e + ep_size]) for e in range(ep_size)]
    return ep_size, ep_fsdp_groups[ctx.rank % ep_size], ep_groups[ctx.rank // ep_size]


def make_inputs(ctx: InputContext):
    ep_size, ep_fsdp_group, ep_group = ep_layout(ctx)
    ctx.seed(ctx.rank)
    non_ep_grad_tensors = [random_grad(ctx)]
    ep_grad_tensors = [random_grad(ctx)]
    return (non_ep_grad_tensors, ep_grad_tensors, 1.0, 2.0, ep_size, dist.group.WORLD, ep_fsdp_group, ep_group)


def solution(
    non_ep_grad_tensors,
    ep_grad_tensors,
    max_norm: float,
    norm_type: float = 2.0,
    ep_size: int = 1,
    fsdp_group=None,
    ep_fsdp_group=None,
    ep_group=None,
) -> torch.Tensor:
    if ep_size > 1 and ep_grad_tensors:
        for g in ep_grad_tensors:
            if g is not None:
                g.mul_(1.0 / ep_size)
    p = float(norm_type)
    device = grads_device(non_ep_grad_tensors, ep_grad_tensors)
    non_ep_total = sum_of_powers(non_ep_grad_tensors, p, device)
    if fsdp_group is not None:
        dist.all_reduce(non_ep_total, op=dist.ReduceOp.SUM, group=fsdp_group)
    ep_total = sum_of_powers(ep_grad_tensors, p, device)
    if ep_fsdp_group is not None:
        dist.all_reduce(ep_total, op=dist.ReduceOp.SUM, group=ep_fsdp_group)
    if ep_group is not None:
        dist.all_reduce(ep_total, op=dist.ReduceOp.SUM, group=ep_group)
    total_norm = (non_ep_total + ep_total) ** (1.0 / p)
    clip_(list(non_ep_grad_tensors) + list(ep_grad_tensors), max_norm, total_norm)
    return total_norm


PROBLEM = Problem(id=22, make_inputs=make_inputs, solution=solution)
