"""49 moe_ep_balanced: expert-parallel MoE forward with one expert per rank (E = W, top-2), VeOmni dispatcher.

Interface as PKB: ``solution(hidden_states (M, N), gate_weight (E, N), gate_bias (E,), gate_proj, up_proj,
down_proj (nn.Linear N->128, N->128, 128->N, in D), num_experts = W, top_k = 2, group = None) -> (M, N)`` in D,
rank-specific. out[t] = sum_j w[t, j] * MLP_{sel[t, j]}(hidden_states[t]) where MLP_e is rank e's expert and (w, sel)
is the top-2 of this rank's bf16 router softmax (not renormalised). The algorithm is in ``_moe_ep_veomni``.

Decisions:
- Routing (spec Pitfalls): the router is unscaled (logit std ~ 32) and must be reproduced exactly; we keep it: the
  reference routes with bf16 logits, a bf16 softmax and torch.topk, as the spec says candidates must. Expert math
  has a comfortable margin at atol = rtol = 1e-2 (outputs std ~ 0.1), and with k = 2 the combine starts from zeros,
  so its result does not depend on the order of the two additions.
- Structure kept as in the spec: each rank has its own router weights and one MLP per rank.
- W = 1 is refused (a top-2 over one expert raises), as in the spec.
- Null answers: zeros miss by O(0.1) on most elements; without communication every token would use the rank's own
  MLP (and the dispatch buffers would stay unfilled), which misses for tokens routed elsewhere.
"""

import torch.distributed as dist

from problems._moe_ep_veomni import TOP_K, make_moe_inputs, moe_ep_forward
from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    return make_moe_inputs(ctx, num_experts=ctx.world_size, top_k=TOP_K)


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


PROBLEM = Problem(id=49, make_inputs=make_inputs, solution=solution, allows_world_size=lambda W: W >= 2)
