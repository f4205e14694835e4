"""30 moe_epgroupgemm_lora_backward: in-place sum all-reduce of three LoRA gradients over the EP group (WORLD).

Interface as PKB: ``solution(grad_fc1_1_lora_A (8, N), grad_fc1_2_lora_A (8, N), grad_fc2_lora_B (N, 8),
group=None) -> (the same three tensors)``, each replaced in place by its sum over all ranks, in the order listed;
identical on every rank and aliasing the inputs.

Decisions (spec Pitfalls):
- Reduction order: PKB sums bf16 standard normals with NCCL in bf16, so its expected values depend on the algorithm
  (about 1-3 % of elements differ between orders, beyond atol). Our reference accumulates each tensor in fp32 (one
  all-reduce per tensor, as PKB) and rounds once to bf16 when it writes the result back into the input. The check
  allows, on top of atol = rtol = 1e-2, the rounding error of any order of W bf16 additions (``bf16_sum_slack``),
  so a plain NCCL bf16 all-reduce, a ring from any start and an fp32 reduction all pass, while zeros, the rank's own
  gradients (no communication) or a sum missing one rank miss by O(1).
- In place: the reference writes into and returns the input tensors; the check only compares values, so fresh
  tensors pass too (as in PKB), and fusing the three all-reduces is allowed.
- Timing (judge's concern, noted by the spec): in-place calls keep multiplying the reused tensors by W, reaching inf
  after ~42 calls; that does not change the speed of the arithmetic.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem, bf16_sum_slack

LORA_RANK = 8


def make_inputs(ctx: InputContext):
    ctx.seed(ctx.rank)
    grad_fc1_1_lora_A = torch.randn(LORA_RANK, ctx.N, device=ctx.device).to(ctx.dtype)
    grad_fc1_2_lora_A = torch.randn(LORA_RANK, ctx.N, device=ctx.device).to(ctx.dtype)
    grad_fc2_lora_B = torch.randn(ctx.N, LORA_RANK, device=ctx.device).to(ctx.dtype)
    return grad_fc1_1_lora_A, grad_fc1_2_lora_A, grad_fc2_lora_B, None


def solution(
    grad_fc1_1_lora_A: torch.Tensor, grad_fc1_2_lora_A: torch.Tensor, grad_fc2_lora_B: torch.Tensor, group=None
):
    grads = (grad_fc1_1_lora_A, grad_fc1_2_lora_A, grad_fc2_lora_B)
    for grad in grads:
        total = grad.float()  # fp32 accumulation: an order-independent reference (see the docstring)
        dist.all_reduce(total, op=dist.ReduceOp.SUM, group=group)
        grad.copy_(total)
    return grads


PROBLEM = Problem(id=30, make_inputs=make_inputs, solution=solution, slack=bf16_sum_slack)
