"""26 moe_token_preprocess: expert-parallel all-to-all split bookkeeping from a routing mask (VeOmni / Megatron).

Interface as PKB: ``solution(expert_mask (E=8, topk=2, M) float32 non-contiguous, num_experts = 8, group = None)
-> (input_splits (W,) int64, output_splits (W,) int64, num_global_tokens_per_local_expert (W, L) float32,
num_global_sum_tokens_per_local_expert (L,) float32)``, all on the CPU, rank-specific; L = 8 / W, WORLD is used
when group is None. One all_gather_into_tensor of the E fp32 local counts; two host syncs (.tolist()).

Decisions (spec Pitfalls):
- W must divide 8 (PKB's builder does not assert it, the reshape fails otherwise): ``allows_world_size``.
- The counts are integers (exact in fp32), but PKB's allclose lets a count near 256 be off by 2. We compare with
  atol = 0.5, rtol = 0: every count must be exact (int64 outputs are compared exactly by the judge anyway).
- The mask is built as in PKB: one_hot of (M, 2) independent uniform experts (a token may pick one expert twice),
  float32 whatever D is, axes reversed into a non-contiguous (E, 2, M) view; its clones keep those strides.
- The outputs are CPU tensors (non_blocking copies; a no-op on CPU). Device is not checked, dtypes are.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems._moe_routing import NUM_EXPERTS, TOP_K, divides_experts
from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    ctx.seed(ctx.rank)
    selected = torch.randint(0, NUM_EXPERTS, (ctx.M, TOP_K), dtype=torch.int64, device=ctx.device)
    expert_mask = F.one_hot(selected, NUM_EXPERTS).float().permute(2, 1, 0)  # (E, topk, M), strides (1, E, topk*E)
    return expert_mask, NUM_EXPERTS, None


def solution(expert_mask: torch.Tensor, num_experts: int, group=None):
    ep_size = dist.get_world_size(group)
    rank = dist.get_rank(group)
    local_experts = num_experts // ep_size
    tokens_per_expert = expert_mask.sum(dim=(1, 2))  # (E,) fp32
    input_splits = tokens_per_expert.reshape(ep_size, local_experts).sum(dim=1).long().tolist()
    gathered = torch.empty(ep_size * num_experts, dtype=tokens_per_expert.dtype, device=tokens_per_expert.device)
    dist.all_gather_into_tensor(gathered, tokens_per_expert, group=group)
    per_local_expert = gathered.view(ep_size, num_experts)[:, rank * local_experts : (rank + 1) * local_experts]
    output_splits = per_local_expert.sum(dim=1).long().tolist()
    sum_per_local_expert = per_local_expert.sum(dim=0)
    cpu = torch.device("cpu")
    return (
        torch.tensor(input_splits, dtype=torch.int64),
        torch.tensor(output_splits, dtype=torch.int64),
        per_local_expert.to(cpu, non_blocking=True),
        sum_per_local_expert.to(cpu, non_blocking=True),
    )


PROBLEM = Problem(
    id=26, make_inputs=make_inputs, solution=solution, allows_world_size=divides_experts, atol=0.5, rtol=0.0
)
