"""The VeOmni / Megatron-style expert-parallel MoE forward shared by problems 49, 50 and 51.

``moe_ep_forward`` routes with a bf16 top-k router, counts tokens per expert, all-gathers the count table over the
EP group, permutes the token rows expert-major, dispatches them with all_to_all_single, regroups them
local-expert-major, applies this rank's single MLP, undoes the regroup, sends the rows back and combines them with
their routing weights. ``make_moe_inputs`` builds the rank-specific inputs of those problems.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from problems.base import InputContext

EXPERT_HIDDEN = 128
TOP_K = 2


def make_moe_inputs(ctx: InputContext, num_experts: int, top_k: int):
    """hidden_states, router weight and bias, then the rank's expert MLP (default nn.Linear init, CPU fp32, then cast).

    Everything is rank-specific (ctx.seed(rank)), as in the spec: each rank routes with its own router.
    """
    ctx.seed(ctx.rank)
    hidden_states = torch.randn(ctx.M, ctx.N, dtype=ctx.dtype, device=ctx.device)
    gate_weight = torch.randn(num_experts, ctx.N, dtype=ctx.dtype, device=ctx.device)
    gate_bias = torch.randn(num_experts, dtype=ctx.dtype, device=ctx.device)
    gate_proj = nn.Linear(ctx.N, EXPERT_HIDDEN)
    up_proj = nn.Linear(ctx.N, EXPERT_HIDDEN)
    down_proj = nn.Linear(EXPERT_HIDDEN, ctx.N)
    for module in (gate_proj, up_proj, down_proj):
        module.to(device=ctx.device, dtype=ctx.dtype)
    return (hidden_states, gate_weight, gate_bias, gate_proj, up_proj, down_proj, num_experts, top_k, None)


def route(hidden_states, gate_weight, gate_bias, top_k):
    """bf16 router as in the spec: logits and softmax in D, torch.topk (descending, not renormalised)."""
    logits = F.linear(hidden_states, gate_weight, gate_bias)
    probs = torch.softmax(logits, dim=-1)
    return torch.topk(probs, top_k, dim=-1)


@torch.no_grad()
def moe_ep_forward(
    hidden_states, gate_weight, gate_bias, gate_proj, up_proj, down_proj, num_experts: int, top_k: int, group
) -> torch.Tensor:
    P = dist.get_world_size(group)
    me = dist.get_rank(group)
    L = num_experts // P
    T, N = hidden_states.shape
    weights, experts = route(hidden_states, gate_weight, gate_bias, top_k)

    # Counts per expert and the (source rank, expert) table of the group.
    counts = torch.bincount(experts.reshape(-1), minlength=num_experts)
    table = torch.empty(P * num_experts, dtype=counts.dtype, device=counts.device)
    dist.all_gather_into_tensor(table, counts, group=group)
    table = table.view(P, num_experts)[:, me * L : (me + 1) * L].cpu()  # (source, local expert); host sync
    input_splits = counts.view(P, L).sum(dim=1).tolist()
    output_splits = table.sum(dim=1).tolist()

    # Permute (token, expert) pairs expert-major, tokens ascending within an expert.
    tokens = torch.arange(T, device=experts.device).repeat_interleave(top_k)
    order = torch.argsort(experts.reshape(-1) * T + tokens)
    token_of_row = tokens[order]
    send = hidden_states.index_select(0, token_of_row)

    recv = hidden_states.new_empty(sum(output_splits), N)
    dist.all_to_all_single(recv, send, output_splits, input_splits, group=group)

    # Received chunks are (source, local expert); regroup to (local expert, source), run the MLP, undo.
    sizes = table.reshape(-1).tolist()
    source_major = list(recv.split(sizes))
    expert_major = [source_major[p * L + e] for e in range(L) for p in range(P)]
    x = torch.cat(expert_major)
    y = down_proj(F.silu(gate_proj(x)) * up_proj(x))
    y_chunks = y.split([sizes[p * L + e] for e in range(L) for p in range(P)])
    back = torch.cat([y_chunks[e * P + p] for p in range(P) for e in range(L)])

    returned = hidden_states.new_empty(T * top_k, N)
    dist.all_to_all_single(returned, back, input_splits, output_splits, group=group)

    # Combine: weight each row by its routing probability (in D) and add it to its token.
    weighted = returned * weights.reshape(-1)[order].unsqueeze(1)
    out = torch.zeros_like(hidden_states)
    out.scatter_add_(0, token_of_row.unsqueeze(1).expand(-1, N), weighted)
    return out
