"""42 zero2_optimizer_shard_grad: ZeRO-2 training step over WORLD (broadcast parameters, local MLP forward and
backward, reduce-scatter of the gradients to 1/W shards, Adam on the shard, all-gather of the updated shards).

Interface as PKB (identical to problem 41): ``solution(X_local, y_local, W1, b1, W2, b2, exp_avg_part (P/W,),
exp_avg_sq_part (P/W,), lr, beta1, beta2, eps, step) -> (W1', b1', W2', b2', m_part, v_part)``, bf16; parameters
identical on every rank, moment shards rank-specific. Only the gradient step differs from problem 41: a
``reduce_scatter_tensor`` SUM gives rank r the flat range [r*P/W, (r+1)*P/W) of the summed gradients, divided by W.

Decisions (spec Pitfalls): as problem 41 (world-size rule, hidden growth, lr = 0.1 and a non-zero Adam state, moment
slack for the bf16 reduction order). The reference reduce-scatters in fp32 and rounds once, so its result equals
problem 41's on the same inputs; NCCL's bf16 reduce-scatter order is covered by the moment slack.
"""

import torch
import torch.distributed as dist

from problems._dp_adam import broadcast_flat, local_flat_grad, moment_compare, unflatten
from problems.base import Problem
from problems.p41_zero1_optimizer_shard import _allowed, adam_on_shard_and_unshard, make_sharded_inputs


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
    grad = local_flat_grad(X_local, y_local, *unflatten(flat_params, like))
    world_size = dist.get_world_size()
    total = torch.empty(grad.numel() // world_size, dtype=torch.float32, device=grad.device)
    dist.reduce_scatter_tensor(total, grad.float(), op=dist.ReduceOp.SUM)  # fp32: order-independent reference
    grad_shard = total.to(grad.dtype) / world_size
    return adam_on_shard_and_unshard(
        flat_params, grad_shard, exp_avg_part, exp_avg_sq_part, like, lr, beta1, beta2, eps, step
    )


make_inputs = make_sharded_inputs
PROBLEM = Problem(
    id=42, make_inputs=make_inputs, solution=solution, compare=moment_compare("ppppmv"), allows_world_size=_allowed
)
