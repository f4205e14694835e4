"""21 clip_grad_norm_no_ep: global L2 gradient norm over FSDP shards, with in-place clipping (VeOmni FSDP2).

Interface as PKB: ``solution(grad_tensors: list of 3 (M, N) D, max_norm: float = 1.0, norm_type: float = 2.0,
fsdp_group = dist.group.WORLD) -> 0-d float32 total_norm``, identical on every rank. Sum of ||fp32(g)||_p^p over the
local grads, one all_reduce (SUM) of that fp32 scalar on fsdp_group, total_norm = acc^(1/p); if it exceeds
max_norm every grad is multiplied in place by max_norm / total_norm.

Decisions (spec Pitfalls):
- PKB's grads are unit normals, so the norm is sqrt(3 M N W) to within 0.1% and a constant passes the 1% check.
  Each grad here is a normal times its own random scale in [1/2, 2] (``_grad_norm_clip.random_grad``): the norm
  varies by trial and rank, so constants, zeros and the local norm (no communication) fail.
- The in-place clipping is performed but not checked: only total_norm is returned and compared (interface as PKB).
  At these norms (thousands) the clip always fires on the compared call.
- fp32 accumulation of W scalars: order effects ~1e-7, default tolerance kept.
- None entries are skipped; an empty or all-None list gives a zero norm (on cuda:0, or the CPU without CUDA).
"""

import torch
import torch.distributed as dist

from problems._grad_norm_clip import clip_, grads_device, random_grad, sum_of_powers
from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    ctx.seed(ctx.rank)
    grad_tensors = [random_grad(ctx) for _ in range(3)]
    return grad_tensors, 1.0, 2.0, dist.group.WORLD


def solution(grad_tensors, max_norm: float, norm_type: float = 2.0, fsdp_group=None) -> torch.Tensor:
    p = float(norm_type)
    acc = sum_of_powers(grad_tensors, p, grads_device(grad_tensors))
    if fsdp_group is not None:
        dist.all_reduce(acc, op=dist.ReduceOp.SUM, group=fsdp_group)
    total_norm = acc ** (1.0 / p)
    clip_(grad_tensors, max_norm, total_norm)
    return total_norm


PROBLEM = Problem(id=21, make_inputs=make_inputs, solution=solution)
