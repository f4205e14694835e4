"""24 load_balancing_loss_fn: MoE router auxiliary (load-balancing) loss (HF Mixtral form), averaged over ranks.

Interface as PKB: ``solution(gate_logits (M, E=8) D, num_experts = 8, top_k = 2, attention_mask = None) -> 0-d
float32``, identical on every rank. p = softmax(logits) in D, top-k on p, f[k, e] = fraction of tokens whose k-th
choice is e (fp32), P[e] = mean of p[:, e] (D), loss = E * sum_{k,e} f[k, e] * P[e]; one all_reduce (SUM) of the
fp32 scalar on WORLD, then / W. The unused branches (a tuple/list of per-layer logits, a (batch, seq) attention
mask) are kept as in the HF function.

Decisions (spec Pitfalls):
- PKB's logits are unit normals, so every rank's loss is ~top_k = 2.0 and the constant 2.0 passes. Here each rank
  adds a per-expert bias (a normal vector times a random strength in [0, 2]) to its normal logits, making the
  routing imbalanced by a random amount: rank losses range over ~2-7 and the mean varies by trial, so constants,
  zeros, the local loss (no communication) and a sum instead of a mean fail.
- Ties between the 2nd and 3rd probability after bf16 rounding may be broken differently; that moves the loss by
  O(1/M), far inside atol = rtol = 1e-2. The fp32 all-reduce of W scalars is order-insensitive at this tolerance.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.base import InputContext, Problem

NUM_EXPERTS = 8
TOP_K = 2


def make_inputs(ctx: InputContext):
    ctx.seed(ctx.rank)
    logits = torch.randn(ctx.M, NUM_EXPERTS, device=ctx.device)
    strength = 2.0 * torch.rand((), device=ctx.device)
    bias = strength * torch.randn(NUM_EXPERTS, device=ctx.device)  # this rank's router favours some experts
    return (logits + bias).to(ctx.dtype), NUM_EXPERTS, TOP_K, None


def load_balancing_loss(gate_logits, num_experts: int, top_k: int = 2, attention_mask=None) -> torch.Tensor:
    """The local HF auxiliary loss (0-d fp32)."""
    if isinstance(gate_logits, (tuple, list)):
        device = gate_logits[0].device
        gate_logits = torch.cat([layer.to(device) for layer in gate_logits], dim=0)
    routing_weights = F.softmax(gate_logits, dim=-1)
    _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    expert_mask = F.one_hot(selected_experts, num_experts)  # (tokens, top_k, E)
    if attention_mask is None:
        tokens_per_expert = expert_mask.float().mean(dim=0)  # (top_k, E)
        router_prob_per_expert = routing_weights.mean(dim=0)  # (E,) in D
    else:
        batch, seq = attention_mask.shape
        layers = gate_logits.shape[0] // (batch * seq)
        token_mask = (
            attention_mask[None, :, :, None, None]
            .expand(layers, batch, seq, top_k, num_experts)
            .reshape(-1, top_k, num_experts)
            .to(gate_logits.device)
        )
        tokens_per_expert = (expert_mask.float() * token_mask).sum(dim=0) / token_mask.sum(dim=0)
        prob_mask = (
            attention_mask[None, :, :, None]
            .expand(layers, batch, seq, num_experts)
            .reshape(-1, num_experts)
            .to(gate_logits.device)
        )
        router_prob_per_expert = (routing_weights * prob_mask).sum(dim=0) / prob_mask.sum(dim=0)
    return (tokens_per_expert * router_prob_per_expert.unsqueeze(0)).sum() * num_experts


def solution(gate_logits, num_experts: int, top_k: int = 2, attention_mask=None) -> torch.Tensor:
    loss = load_balancing_loss(gate_logits, num_experts, top_k, attention_mask).float()
    dist.all_reduce(loss, op=dist.ReduceOp.SUM)
    return loss / dist.get_world_size()


PROBLEM = Problem(id=24, make_inputs=make_inputs, solution=solution)
