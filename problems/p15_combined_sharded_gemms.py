"""15 combined_sharded_gemms: all-gather -> up-projection GEMM + SiLU -> down-projection GEMM -> reduce-scatter.

Interface as PKB: ``solution(x_local (M_rows, H/W), W1 (H, F), W2 (F, H)) -> (M_rows/W, H)`` with M_rows = M rounded
up to a multiple of W, H = 256 rounded up to a multiple of W, F = 512 (N is unused). x_local is rank r's column block
of X = [x_0 | ... | x_{W-1}]; W1 and W2 are drawn per rank (not replicated weights), all standard normal, in that
order. Rank r returns Y_r = bf16(bf16(SiLU(bf16(X_r @ W1_r))) @ W2_r), X_r its row block of X. As PKB, the reference
all-gathers (list form), computes Z and SiLU for all M_rows rows, multiplies its own row block by W2, places it in an
otherwise-zero (M_rows, H) buffer and reduce-scatters that (exact: only zeros are added to each block).

Decision (spec Pitfalls, intermediate rounding): the rounding of Z and of A to D is part of the semantics (PKB's
check enforces it), but the exact bf16 value of Z also depends on the GEMM kernel's fp32 accumulation order, which
flips occasional roundings and moves outputs near zero beyond atol. The check adds a slack of 2^-8 * rms(Y) (about 1
at the defaults, where rms(Y) ~ 255 and the median |Y| ~ 170). Measured at the defaults: another accumulation order
moves outputs by <= 2^-11 rms beyond atol + rtol|Y|, keeping A in fp32 by <= 2^-10.3 rms; both pass. Skipping the
rounding of Z (a fused fp32 GEMM + SiLU epilogue) moves them by up to 2^-7 rms and still fails, as in PKB, and so do
ReLU or GELU instead of SiLU, a missing rank's columns, zeros and wrong row blocks.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.base import InputContext, Problem

HIDDEN = 256
FFN = 512


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def make_inputs(ctx: InputContext):
    W = ctx.world_size
    rows, hidden = _round_up(ctx.M, W), _round_up(HIDDEN, W)
    ctx.seed(ctx.rank)
    x_local = torch.randn(rows, hidden // W, dtype=ctx.dtype, device=ctx.device)
    W1 = torch.randn(hidden, FFN, dtype=ctx.dtype, device=ctx.device)
    W2 = torch.randn(FFN, hidden, dtype=ctx.dtype, device=ctx.device)
    return x_local, W1, W2


def solution(x_local: torch.Tensor, W1: torch.Tensor, W2: torch.Tensor) -> torch.Tensor:
    rank, world_size = dist.get_rank(), dist.get_world_size()
    parts = [torch.empty_like(x_local) for _ in range(world_size)]
    dist.all_gather(parts, x_local.contiguous())
    X = torch.cat(parts, dim=1)

    A = F.silu(X @ W1)  # Z rounded to D by the GEMM, SiLU rounded to D
    block = X.shape[0] // world_size
    Y = A[rank * block : (rank + 1) * block] @ W2

    padded = torch.zeros(X.shape[0], W2.shape[1], dtype=Y.dtype, device=Y.device)
    padded[rank * block : (rank + 1) * block] = Y
    out = torch.empty_like(Y)
    dist.reduce_scatter_tensor(out, padded, op=dist.ReduceOp.SUM)
    return out


def intermediate_rounding_slack(expected: torch.Tensor, world_size: int) -> float:
    """2^-8 of the output's RMS for half-precision outputs: absorbs flips of the bf16 roundings of Z and A."""
    unit = 2.0**-8 if expected.dtype in (torch.bfloat16, torch.float16) else 2.0**-20
    return unit * expected.detach().float().pow(2).mean().sqrt().item()


PROBLEM = Problem(id=15, make_inputs=make_inputs, solution=solution, slack=intermediate_rounding_slack)
