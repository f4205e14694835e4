"""53 fp8_allgather_params: FP8 e4m3 quantize-dequantize of the local parameter shard (delayed scaling with an amax
history), then an all-gather of the reconstructions.

Interface as PKB: ``solution(flat_param_shard (P,) D, amax_history (16,) bf16) -> (full (W*P,) D, new_hist (16,)
bf16)``, P = max(64, min(64*M, 4096)). full[j*P:(j+1)*P] is rank j's reconstruction with rank j's own scale and is
identical on all ranks; new_hist (rotated left, bf16(local amax) last) is rank-specific. The recipe is in
``_fp8_delayed_scaling``; the input history is not modified.

Decisions:
- amax_history (spec: all 1e-8, which makes the history invisible): random bf16 values on the scale of the local
  amax, identical on all ranks (see ``make_history``), so the rotation, the max over the history and the new amax
  all decide the scale in some trials. Semantics are unchanged.
- No reduction: the check is exact in practice; atol = rtol = 1e-2 as in the spec. Sending fp8 plus one scale per
  rank and dequantizing on the receiver gives identical values (spec) and passes.
- Null answers: zeros miss by O(1); without communication the other ranks' blocks are copies of the own block;
  skipping the fp8 round trip moves about a third of the elements out of tolerance (spec simulation).
"""

import torch
import torch.distributed as dist

from problems._fp8_delayed_scaling import make_history, quantize_dequantize, shard_length
from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    P = shard_length(ctx.M)
    history = make_history(ctx, P)
    ctx.seed(ctx.rank)
    flat_param_shard = torch.randn(P, dtype=ctx.dtype, device=ctx.device)
    return flat_param_shard, history


@torch.no_grad()
def solution(flat_param_shard: torch.Tensor, amax_history: torch.Tensor):
    recon, new_hist = quantize_dequantize(flat_param_shard, amax_history)
    full = torch.empty(recon.numel() * dist.get_world_size(), dtype=recon.dtype, device=recon.device)
    dist.all_gather_into_tensor(full, recon)
    return full, new_hist


PROBLEM = Problem(id=53, make_inputs=make_inputs, solution=solution)
