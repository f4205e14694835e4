"""32 fused_moe_fwd_lora: expert-parallel MoE forward over WORLD with LoRA-augmented expert MLPs.

Interface as PKB: ``solution(hidden_states (M, N), gate_weight (8, N), gate_bias (8,), gate_proj, up_proj, down_proj
(nn.Linear N->128, N->128, 128->N, bf16, with biases), lora_gate_A (8, N), lora_gate_B (128, 8), lora_up_A (8, N),
lora_up_B (128, 8), lora_down_A (8, 128), lora_down_B (N, 8), num_experts=8, top_k=2, group=None) -> (M, N)``,
rank-specific. Everything as problem 31 (routing, count all-gather, uneven all_to_all_single dispatch and combine,
weighted scatter-add) except the expert of rank q, applied to each received row z with bf16 ops:
gate_x = gate_proj(z) + (z A_g^T) B_g^T, up_x = up_proj(z) + (z A_u^T) B_u^T, y = silu(gate_x) * up_x,
f_q(z) = down_proj(y) + (y A_d^T) B_d^T, with rank q's modules and LoRA factors.

Decisions (spec Pitfalls):
- PKB's LoRA factors are unscaled randn, which makes outputs ~1e5 and the check "practically unpassable" (only the
  reference's exact bf16 GEMMs pass). We keep the interface and the unscaled formula (no alpha/r factor, B not zero)
  but draw A with std 1/sqrt(fan_in) and B with std 0.2, so the LoRA path is about as large as the base path and the
  output has RMS ~0.27.
- Tolerance: the expert is a chain of ~10 bf16 roundings with cancellations (base + LoRA sums), so an fp32-intermediate
  kernel (or merged W + B A weights) differs from the bf16 reference by up to ~0.03 on a few dozen of 1M elements,
  beyond atol = rtol = 1e-2 (measured: needed extra tolerance <= 0.04 RMS over 16 rank-trials at the defaults). On
  top of atol = rtol = 1e-2 we allow 0.1 * RMS(expected) (``slack``): fp32 and merged implementations pass (the test
  checks one), while dropping the LoRA path, a wrong expert, top-1 only or no communication miss by O(RMS).
- Routing ties: as problem 31, the gate weight is scaled to logit std 4 and tokens whose 2nd and 3rd logits are
  closer than 0.5 are redrawn, so the top-2 set does not depend on router arithmetic or the top-k tie rule.
- Every rank has its own router, MLP and LoRA factors (rank-specific seed); for W < 8 a rank's L experts are equal.
- The reference runs under no_grad (the judge detaches outputs anyway). Weight-only work (merging LoRA, transposes,
  gathering all experts once) may be cached across timed calls: the weights are the same objects on every call.
"""

import math

import torch
import torch.nn.functional as F

from problems._moe_ep import EXPERT_HIDDEN, NUM_EXPERTS, TOP_K, draw_expert_mlp, draw_tokens_and_router, moe_forward
from problems.base import InputContext, Problem

LORA_RANK = 8
LORA_B_STD = 0.2


def rms_slack(expected: torch.Tensor, world_size: int) -> float:
    """Extra absolute tolerance for the bf16 rounding chain of the LoRA expert: 10 % of the output's RMS."""
    return 0.1 * expected.detach().float().pow(2).mean().sqrt().item()


def make_inputs(ctx: InputContext):
    hidden_states, gate_weight, gate_bias = draw_tokens_and_router(ctx)

    def lora(fan_in, fan_out):
        A = (torch.randn(LORA_RANK, fan_in, device=ctx.device) / math.sqrt(fan_in)).to(ctx.dtype)
        B = (torch.randn(fan_out, LORA_RANK, device=ctx.device) * LORA_B_STD).to(ctx.dtype)
        return A, B

    lora_gate = lora(ctx.N, EXPERT_HIDDEN)
    lora_up = lora(ctx.N, EXPERT_HIDDEN)
    lora_down = lora(EXPERT_HIDDEN, ctx.N)
    gate_proj, up_proj, down_proj = draw_expert_mlp(ctx)
    return (
        hidden_states,
        gate_weight,
        gate_bias,
        gate_proj,
        up_proj,
        down_proj,
        *lora_gate,
        *lora_up,
        *lora_down,
        NUM_EXPERTS,
        TOP_K,
        None,
    )


def solution(
    hidden_states,
    gate_weight,
    gate_bias,
    gate_proj,
    up_proj,
    down_proj,
    lora_gate_A,
    lora_gate_B,
    lora_up_A,
    lora_up_B,
    lora_down_A,
    lora_down_B,
    num_experts: int,
    top_k: int,
    group=None,
) -> torch.Tensor:
    def with_lora(linear, A, B, z):
        return linear(z) + F.linear(F.linear(z, A), B)

    def expert(rows):
        y = F.silu(with_lora(gate_proj, lora_gate_A, lora_gate_B, rows)) * with_lora(
            up_proj, lora_up_A, lora_up_B, rows
        )
        return with_lora(down_proj, lora_down_A, lora_down_B, y)

    with torch.no_grad():
        return moe_forward(hidden_states, gate_weight, gate_bias, expert, num_experts, top_k, group)


PROBLEM = Problem(
    id=32,
    make_inputs=make_inputs,
    solution=solution,
    slack=rms_slack,
    allows_world_size=lambda W: W >= 1 and NUM_EXPERTS % W == 0,
)
