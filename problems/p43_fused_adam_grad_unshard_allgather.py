"""43 fused_adam_grad_unshard_allgather: bf16 Adam step on this rank's parameter shard, then all-gather of the
updated shards over WORLD.

Interface as PKB: ``solution(grad_shard (P,), master_shard (P,), exp_avg (P,), exp_avg_sq (P,), lr, beta1, beta2,
eps, step) -> (W*P,)`` with P = max(64, min(64*M, 4096)), bf16, identical on every rank. The reference works on
copies (inputs untouched): m = beta1*exp_avg + (1-beta1)*g and v = beta2*exp_avg_sq + (1-beta2)*g^2 as two in-place
bf16 ops each, w = master - lr*((m/bc1)/(sqrt(v/bc2) + eps)) with bc = 1 - beta^step, then one
``all_gather_into_tensor`` of w in rank order. The shards are rank r's slices of shared length-W*P vectors.

Decisions (spec Pitfalls): PKB's check cannot see the optimizer (zero moments and lr = 1e-3 move each weight by
<= 1e-3, below atol; just all-gathering master_shard passes). We pass lr = 0.1 and a non-zero Adam state (exp_avg ~
0.1 * N(0, 1), exp_avg_sq = 0.01 * (1 + N(0, 1)^2), rank r's slices of shared vectors; see ``_dp_adam``): the update
is O(0.03-0.1) and varies with m and v, so skipping the step, ignoring the moments or a wrong bias correction fail,
while fp32 arithmetic inside a fused kernel stays within atol = rtol = 1e-2 (tested). No reduction is involved, so
the result does not depend on any order. step = 1 + (trial mod 7), beta1, beta2, eps as PKB.
"""

import torch
import torch.distributed as dist

from problems._dp_adam import BETA1, BETA2, EPS, LR, adam_bf16, draw_adam_state, step_of
from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    P = max(64, min(ctx.M * 64, 4096))
    ctx.seed("shared")
    grad = torch.randn(P * ctx.world_size, device=ctx.device).to(ctx.dtype)
    master = torch.randn(P * ctx.world_size, device=ctx.device).to(ctx.dtype)
    exp_avg, exp_avg_sq = draw_adam_state(ctx, P * ctx.world_size)
    own = slice(ctx.rank * P, (ctx.rank + 1) * P)
    shards = [t[own].clone() for t in (grad, master, exp_avg, exp_avg_sq)]
    return (*shards, LR, BETA1, BETA2, EPS, step_of(ctx))


def solution(
    grad_shard, master_shard, exp_avg, exp_avg_sq, lr: float, beta1: float, beta2: float, eps: float, step: int
) -> torch.Tensor:
    with torch.no_grad():
        updated, _, _ = adam_bf16(master_shard, grad_shard, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, step)
        out = torch.empty(dist.get_world_size() * updated.numel(), dtype=updated.dtype, device=updated.device)
        dist.all_gather_into_tensor(out, updated.contiguous())
    return out


PROBLEM = Problem(id=43, make_inputs=make_inputs, solution=solution)
