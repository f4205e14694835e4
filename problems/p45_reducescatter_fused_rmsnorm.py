"""45 reducescatter_fused_rmsnorm: sum reduce-scatter of partial activations, mean over W, then RMSNorm per row.

Interface as PKB: ``solution(rs_input_1d (W*chunk,), gamma (hidden,), eps: float) -> (rows, hidden)`` in D,
rank-specific (rank r normalises chunk r). hidden = max(32, min(N, 128)), rows = max(2, max(M, W) // max(W, 4)),
chunk = rows * hidden; gamma is identical on all ranks, rs_input_1d is rank-specific; eps = 1e-5.

Decisions:
- Reduction order (spec Pitfalls): PKB's expected output depends on the bf16 order inside NCCL's reduce-scatter,
  and RMSNorm with gamma ~ N(0, 1) amplifies that noise, so even correct kernels failed a few elements. We draw
  rs_input_1d as random integers in [-k, k], k = max(1, 256 // W), stored in D: every partial sum of W of them is
  an integer of magnitude <= 256, exact in bf16, so the reduced chunk is the same for every summation order (ring,
  tree, NVLS, fp32) and the check can keep atol = rtol = 1e-2. The division by W and the fp32 norm follow the spec.
- gamma stays randn (not ones), identical on all ranks, as in the spec; rows still depend on W as in the spec.
- Null answers: zeros and a rank's own chunk normalised without the sum both miss by O(1); the input has another
  shape.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem

EPS = 1e-5


def shape(M: int, N: int, W: int) -> tuple[int, int]:
    hidden = max(32, min(N, 128))
    rows = max(2, max(M, W) // max(W, 4))
    return rows, hidden


def make_inputs(ctx: InputContext):
    rows, hidden = shape(ctx.M, ctx.N, ctx.world_size)
    ctx.seed("shared")
    gamma = torch.randn(hidden, device=ctx.device).to(ctx.dtype)
    ctx.seed(ctx.rank)
    bound = max(1, 256 // ctx.world_size)
    values = torch.randint(-bound, bound + 1, (ctx.world_size * rows * hidden,), device=ctx.device)
    return values.to(ctx.dtype), gamma, EPS


def solution(rs_input_1d: torch.Tensor, gamma: torch.Tensor, eps: float) -> torch.Tensor:
    W = dist.get_world_size()
    hidden = gamma.numel()
    chunk = torch.empty(rs_input_1d.numel() // W, dtype=rs_input_1d.dtype, device=rs_input_1d.device)
    dist.reduce_scatter_tensor(chunk, rs_input_1d, op=dist.ReduceOp.SUM)
    chunk.div_(W)
    x = chunk.view(-1, hidden).float()
    y = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * gamma.float()
    return y.to(rs_input_1d.dtype)


PROBLEM = Problem(id=45, make_inputs=make_inputs, solution=solution)
