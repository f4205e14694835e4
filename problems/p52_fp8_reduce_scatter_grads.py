"""52 fp8_reduce_scatter_grads: FP8 e4m3 quantize-dequantize of the local gradient (delayed scaling with an amax
history), then a sum reduce-scatter and a division by W.

Interface as PKB: ``solution(flat_grads (P*W,) D, amax_history (16,) bf16) -> (out_shard (P,) D, new_hist (16,)
bf16)``, both rank-specific, P = max(64, min(64*M, 4096)). out_shard = (sum over ranks of recon_s)[r*P:(r+1)*P] / W,
where recon_s is rank s's round trip with its OWN scale; new_hist is the history rotated left with bf16(local amax)
last. The recipe is in ``_fp8_delayed_scaling``; the input history is not modified.

Decisions:
- amax_history (spec: all 1e-8, which makes the history invisible): random bf16 values on the scale of the local
  amax, identical on all ranks (see ``make_history``), so the rotation, the max over the history and the new amax
  all decide the scale in some trials. Semantics are unchanged.
- Reduction order: the reference sums fp32 copies of the bf16 reconstructions and rounds once, then divides by W in
  D (exact for power-of-two W, one rounding otherwise, as in the spec). out_shard gets the slack of W bf16
  partials summed in any order (``bf16_sum_slack``); new_hist must match exactly up to atol = rtol = 1e-2 (its
  entries are copies of the input and the bf16 amax, no arithmetic), so it gets no slack.
- Null answers: zeros and the local gradient's own shard (no reduce-scatter) miss by O(1); skipping the fp8 round
  trip moves ~700 of 4096 elements per rank out of tolerance (spec simulation); the input has another shape.
"""

import torch
import torch.distributed as dist

from problems._fp8_delayed_scaling import HISTORY_LEN, make_history, quantize_dequantize, shard_length
from problems.base import InputContext, Problem, bf16_sum_slack


def make_inputs(ctx: InputContext):
    P = shard_length(ctx.M)
    history = make_history(ctx, P * ctx.world_size)
    ctx.seed(ctx.rank)
    flat_grads = torch.randn(P * ctx.world_size, dtype=ctx.dtype, device=ctx.device)
    return flat_grads, history


@torch.no_grad()
def solution(flat_grads: torch.Tensor, amax_history: torch.Tensor):
    W = dist.get_world_size()
    recon, new_hist = quantize_dequantize(flat_grads, amax_history)
    shard = torch.empty(recon.numel() // W, dtype=torch.float32, device=recon.device)
    dist.reduce_scatter_tensor(shard, recon.float(), op=dist.ReduceOp.SUM)
    out_shard = shard.to(recon.dtype)
    out_shard.div_(W)
    return out_shard, new_hist


def slack(expected: torch.Tensor, W: int) -> float:
    return 0.0 if expected.numel() == HISTORY_LEN else bf16_sum_slack(expected, W)


PROBLEM = Problem(id=52, make_inputs=make_inputs, solution=solution, slack=slack)
