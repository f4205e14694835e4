"""51 moe_ep_narrow: expert-parallel MoE forward inside EP groups of E < W ranks (one expert per rank), VeOmni
dispatcher.

Interface as PKB: ``solution(hidden_states (M, N), gate_weight (E, N), gate_bias (E,), gate_proj, up_proj,
down_proj (nn.Linear N->128, N->128, 128->N, in D), num_experts = E, top_k = min(2, E), group = None) -> (M, N)`` in D,
rank-specific. E is the largest divisor of W in W//2, W//2 - 1, ..., 2, else 1. EP groups are the contiguous blocks
{g*E, ..., g*E + E - 1}; with group = None the reference resolves WORLD when E >= W (only W = 1), raises when E does
not divide W, and otherwise uses the block r // E. out[t] = sum_j w[t, j] * MLP_{g*E + sel[t, j]}(hidden_states[t]).

Decisions:
- EP groups (spec): created by the reference on its first call, one new_group per block in block order on every
  rank, and cached while the default group lives (PKB caches them for the life of the process too).
- Routing (spec Pitfalls): unscaled router kept; bf16 logits, bf16 softmax, torch.topk, as candidates must.
- Degenerate W (spec): W = 1, 2, 3 and primes give E = 1, top_k = 1: no token leaves its rank and the output is
  the rank's own MLP(x) (softmax over one expert = 1). The check is then the expert MLP alone; nothing to
  communicate, so "no communication" is not wrong there. For W = 4, 6, 8, ... tokens travel inside the blocks.
- "Narrow" EP groups are independent problems (ranks r and r + E have different weights), as in the spec.
- Null answers: zeros miss by O(0.1); without communication (E > 1) tokens routed to other ranks get the wrong MLP.
"""

import torch.distributed as dist

from problems._moe_ep_veomni import make_moe_inputs, moe_ep_forward
from problems.base import InputContext, Problem


def num_experts_for(W: int) -> int:
    for E in range(W // 2, 1, -1):
        if W % E == 0:
            return E
    return 1


def make_inputs(ctx: InputContext):
    E = num_experts_for(ctx.world_size)
    return make_moe_inputs(ctx, num_experts=E, top_k=min(2, E))


_BLOCKS: dict = {}


def _ep_group(num_experts: int):
    W = dist.get_world_size()
    if num_experts >= W:
        return dist.group.WORLD
    if W % num_experts:
        raise ValueError(f"world size {W} is not a multiple of num_experts={num_experts}")
    world = dist.group.WORLD
    cached = _BLOCKS.get(num_experts)
    if cached is None or cached[0] is not world:
        blocks = [dist.new_group(list(range(g * num_experts, (g + 1) * num_experts))) for g in range(W // num_experts)]
        cached = _BLOCKS[num_experts] = (world, blocks)
    return cached[1][dist.get_rank() // num_experts]


def solution(hidden_states, gate_weight, gate_bias, gate_proj, up_proj, down_proj, num_experts, top_k, group=None):
    return moe_ep_forward(
        hidden_states,
        gate_weight,
        gate_bias,
        gate_proj,
        up_proj,
        down_proj,
        num_experts,
        top_k,
        group if group is not None else _ep_group(num_experts),
    )


PROBLEM = Problem(
    id=51,
    make_inputs=make_inputs,
    solution=solution,
    # With E = 1 (W = 1, 2, 3 or a prime) the EP groups have one rank: no token leaves its rank, so computing
    # without communication is the spec's own answer (see "Degenerate W" above).
    nulls_that_pass={
        "nocomm": lambda W: "E = 1 at this W: no token leaves its rank" if num_experts_for(W) == 1 else None
    },
)
