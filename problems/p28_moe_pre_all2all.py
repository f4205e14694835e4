"""28 moe_pre_all2all: MoE dispatch: permute tokens by expert, all-to-all, regroup by local expert (VeOmni
token_pre_all2all with its permute and sort_chunks_by_idxs helpers).

Interface as PKB: ``solution(hidden_states (M, N) D, expert_mask (E=8, 2, M) float32, num_experts = 8,
input_splits: list of W ints, output_splits: list of W ints, num_global_tokens_per_local_expert (W, L) int64,
group = None) -> (regrouped (2M, N) D, routing_map (E, M) float32, sorted_idx (2M,) int64, org_shape torch.Size)``,
rank-specific; L = 8 / W, WORLD when group is None. routing_map = mask summed over slots; sorted_idx = token ids
routed to each expert, expert-major, ascending; permuted = hidden[sorted_idx]; one all_to_all_single on WORLD with
the given splits (W = 1: no exchange); the received rows are cut into W * L chunks of the counts (source-major) and
concatenated local-expert-major ("for l, for i: chunk i * L + l").

Decisions (spec Pitfalls):
- The splits are PKB's synthetic equal splits (2M / W rows per peer, not following expert ownership) and must be
  used as given. W must divide 8 and 2M must divide by W (the builder refuses other shapes).
- Counts: PKB sets every entry of num_global_tokens_per_local_expert to 2M / 8, so every regrouping chunk has the
  same size. Ours are identical on all ranks and consistent with the splits (row i adds up to the 2M / W rows from
  rank i) but each row is a random composition (``_moe_routing.per_local_expert_counts``), so a regroup that assumes
  equal chunks fails at W = 2 and 4. At W = 8 (L = 1) they equal PKB's and the regroup is the identity.
- The mask is built as PKB's (two distinct experts per token, in slot order), vectorized instead of a per-token
  randperm loop.
- The integer outputs are compared exactly (the judge compares int64 tensors exactly, not with PKB's float
  allclose); routing_map is float32 0/1; org_shape compares as a tuple of ints.
"""

import torch
import torch.distributed as dist

from problems._moe_routing import (
    NUM_EXPERTS,
    TOP_K,
    as_list,
    divides_experts,
    equal_splits,
    per_local_expert_counts,
    permutation_by_expert,
    require_equal_splits,
    sort_chunks,
    two_distinct_experts,
)
from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    W, M = ctx.world_size, ctx.M
    assert divides_experts(W), f"W = {W} must divide the {NUM_EXPERTS} experts"
    require_equal_splits(TOP_K * M, W)
    counts = per_local_expert_counts(ctx)
    ctx.seed(ctx.rank)
    hidden_states = torch.randn(M, ctx.N, dtype=ctx.dtype, device=ctx.device)
    experts = two_distinct_experts(ctx)
    expert_mask = torch.zeros(NUM_EXPERTS, TOP_K, M, dtype=torch.float32, device=ctx.device)
    tokens = torch.arange(M, device=ctx.device)
    for slot in range(TOP_K):
        expert_mask[experts[:, slot], slot, tokens] = 1.0
    input_splits = equal_splits(TOP_K * M, W)
    output_splits = list(input_splits)
    return hidden_states, expert_mask, NUM_EXPERTS, input_splits, output_splits, counts, None


def solution(
    hidden_states, expert_mask, num_experts, input_splits, output_splits, num_global_tokens_per_local_expert, group=None
):
    org_shape = hidden_states.shape
    hidden = hidden_states.view(-1, org_shape[-1])
    routing_map = expert_mask.sum(dim=1)  # (E, M) fp32, 0/1
    sorted_idx = permutation_by_expert(routing_map != 0)
    permuted = hidden.index_select(0, sorted_idx)

    input_splits, output_splits = as_list(input_splits), as_list(output_splits)
    if sum(input_splits) != permuted.shape[0]:
        raise ValueError(f"input splits add up to {sum(input_splits)}, but {permuted.shape[0]} rows were permuted")
    if dist.get_world_size(group) == 1:
        received = permuted
    else:
        received = permuted.new_empty((sum(output_splits), permuted.shape[1]))
        dist.all_to_all_single(received, permuted, output_splits, input_splits, group=group)

    counts = num_global_tokens_per_local_expert
    sources, local_experts = counts.shape
    order = [i * local_experts + e for e in range(local_experts) for i in range(sources)]
    regrouped = sort_chunks(received, counts.reshape(-1).tolist(), order)
    return regrouped, routing_map, sorted_idx, org_shape


PROBLEM = Problem(id=28, make_inputs=make_inputs, solution=solution, allows_world_size=divides_experts)
