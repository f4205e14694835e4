"""50 moe_ep_wide: expert-parallel MoE forward with two experts per rank (E = 2W, top-2), VeOmni dispatcher.

Interface as PKB: ``solution(hidden_states (M, N), gate_weight (2W, N), gate_bias (2W,), gate_proj, up_proj,
down_proj (nn.Linear N->128, N->128, 128->N, in D), num_experts = 2W, top_k = 2, group = None) -> (M, N)`` in D,
rank-specific. Expert e lives on rank e // 2; both local experts of a rank use that rank's single MLP, so
out[t] = sum_j w[t, j] * MLP_{sel[t, j] // 2}(hidden_states[t]). The algorithm is in ``_moe_ep_veomni``: the received
rows are regrouped local-expert-major before the MLP and back afterwards (no numerical effect, as in the spec).

Decisions:
- Routing (spec Pitfalls): unscaled router kept; the reference routes with bf16 logits, a bf16 softmax and
  torch.topk, as candidates must. Outputs (std ~ 0.1) leave the expert math a comfortable margin at 1e-2; the k = 2
  combine from zeros does not depend on the order of additions.
- "Wide" EP is degenerate (two routing targets share one MLP): kept, it is the spec's semantics.
- W = 1 is allowed: the all-to-alls move nothing, the count all-gather still runs.
- Null answers: zeros miss by O(0.1); without communication tokens routed to other ranks get the wrong MLP.
"""

import torch.distributed as dist

from problems._moe_ep_veomni import TOP_K, make_moe_inputs, moe_ep_forward
from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    return make_moe_inputs(ctx, num_experts=2 * ctx.world_size, top_k=TOP_K)


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
        group if group is not None else dist.group.WORLD,
    )


PROBLEM = Problem(id=50, make_inputs=make_inputs, solution=solution)
