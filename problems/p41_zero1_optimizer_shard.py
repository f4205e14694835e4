"""41 zero1_optimizer_shard: ZeRO-1 training step over WORLD (broadcast parameters, local MLP forward and backward,
gradient all-reduce, Adam on this rank's 1/W shard of the flat parameters, all-gather of the updated shards).

Interface as PKB: ``solution(X_local, y_local, W1, b1, W2, b2, exp_avg_part (P/W,), exp_avg_sq_part (P/W,), lr,
beta1, beta2, eps, step) -> (W1', b1', W2', b2', m_part, v_part)``, bf16; the parameters are identical on every
rank, the moment shards rank-specific. Dims as problem 40, except that hidden grows from max(32, min(N//2, 512)) until
P = hidden*(d_in + 1 + d_out) + d_out is divisible by W. Rank r owns the flat range [r*P/W, (r+1)*P/W) of the order
W1, b1, W2, b2 (shards cut across tensors).

Decisions (spec Pitfalls):
- World size: the builder raises ValueError when no hidden size within 1024 tries makes P divisible by W; at the
  defaults (d_in = d_out = 256) that is any W divisible by 3 or 19, which ``allows_world_size`` rejects (it applies
  the rule at N = 1024).
- As problem 40 (see ``_dp_adam``): lr = 0.1 and a non-zero Adam state (exp_avg_part / exp_avg_sq_part are rank r's
  slices of one shared random state), so the parameter update is visible and the moments carry more than 0.1 * g;
  the reference sums gradients in fp32, and ``compare`` adds the bf16 reduction-order slack to the moment shards only.
"""

import torch
import torch.distributed as dist

from problems._dp_adam import (
    BETA1,
    BETA2,
    EPS,
    LR,
    adam_bf16,
    broadcast_flat,
    draw_adam_state,
    draw_batch_and_params,
    local_flat_grad,
    mlp_dims,
    moment_compare,
    param_count,
    shardable_hidden,
    step_of,
    sum_over_ranks,
    unflatten,
)
from problems.base import InputContext, Problem


def sharded_dims(M: int, N: int, world_size: int):
    """(d_in, hidden, d_out, n_total) with hidden grown until W divides the parameter count; ValueError if none."""
    d_in, hidden, d_out, n_total = mlp_dims(M, N, world_size)
    grown = shardable_hidden(d_in, hidden, d_out, world_size)
    if grown is None:
        raise ValueError(
            f"no hidden size in [{hidden}, {hidden + 1024}) makes the parameter count divisible by W = {world_size}"
        )
    return d_in, grown, d_out, n_total


def make_sharded_inputs(ctx: InputContext):
    """Shared by problems 41 and 42 (identical inputs)."""
    d_in, hidden, d_out, n_total = sharded_dims(ctx.M, ctx.N, ctx.world_size)
    ctx.seed("shared")
    X_local, y_local, params = draw_batch_and_params(ctx, d_in, hidden, d_out, n_total)
    total = param_count(d_in, hidden, d_out)
    exp_avg, exp_avg_sq = draw_adam_state(ctx, total)
    part = total // ctx.world_size
    own = slice(ctx.rank * part, (ctx.rank + 1) * part)
    return (
        X_local,
        y_local,
        *params,
        exp_avg[own].clone(),
        exp_avg_sq[own].clone(),
        LR,
        BETA1,
        BETA2,
        EPS,
        step_of(ctx),
    )


def adam_on_shard_and_unshard(
    flat_params, grad_shard, exp_avg_part, exp_avg_sq_part, like, lr, beta1, beta2, eps, step
):
    """Adam on this rank's range of the flat parameters, then all-gather the updated shards (rank order)."""
    part = grad_shard.numel()
    own = slice(dist.get_rank() * part, (dist.get_rank() + 1) * part)
    shard, m, v = adam_bf16(
        flat_params[own].clone(), grad_shard, exp_avg_part, exp_avg_sq_part, lr, beta1, beta2, eps, step
    )
    full = torch.empty_like(flat_params)
    dist.all_gather_into_tensor(full, shard.contiguous())
    return (*unflatten(full, like), m, v)


def solution(
    X_local,
    y_local,
    W1,
    b1,
    W2,
    b2,
    exp_avg_part,
    exp_avg_sq_part,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    step: int,
):
    like = (W1, b1, W2, b2)
    flat_params = broadcast_flat(like)
    grad = sum_over_ranks(local_flat_grad(X_local, y_local, *unflatten(flat_params, like)))
    part = grad.numel() // dist.get_world_size()
    grad_shard = grad[dist.get_rank() * part : (dist.get_rank() + 1) * part]
    return adam_on_shard_and_unshard(
        flat_params, grad_shard, exp_avg_part, exp_avg_sq_part, like, lr, beta1, beta2, eps, step
    )


def _allowed(world_size: int) -> bool:
    try:
        sharded_dims(1024, 1024, world_size)
    except ValueError:
        return False
    return world_size >= 1


make_inputs = make_sharded_inputs
PROBLEM = Problem(
    id=41, make_inputs=make_inputs, solution=solution, compare=moment_compare("ppppmv"), allows_world_size=_allowed
)
