"""86 tp_muon_orthogonalization: tensor-parallel Muon Newton-Schulz orthogonalization of a column-sharded matrix;
the squared norm and each step's Gram matrix X X^T are all-reduced, and every rank forms the polynomial itself.

Interface as PKB: ``solution(x (512, C/W) bf16, steps=5, coefficient_type="quintic", partition_dim=1, group=None)
-> (512, C/W) bf16``, the rank's column shard; C = roundup(512, W) (roundup(1024, W) when N >= 4096); x is always
bf16, N(0, 1) + 0.01 r. The four coefficient sets of Emerging-Optimizers (simple, quintic, polar_express, aol) are
accepted; steps must be a multiple of the set's length; partition_dim 0 transposes in and out.

Decisions (spec Pitfalls):
- Tolerance: outputs have std ~0.044 and |max| ~0.24, so the default atol = rtol = 1e-2 is loose but not vacuous:
  zeros, the input and a shard orthogonalized alone (no all-reduce) all fail, while legitimate variants (another
  Gram reduction order, TF32 or bf16 iterations, max diff <= 0.002 per the spec) pass. We keep it.
- The reference works in fp32 throughout (all-reduces in fp32), as PKB; no bf16 reduction is involved.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem

ROWS = 512
COEFFICIENTS = {
    "simple": [(3.4445, -4.7750, 2.0315)],
    "quintic": [
        (4.0848, -6.8946, 2.9270),
        (3.9505, -6.3029, 2.6377),
        (3.7418, -5.5913, 2.3037),
        (2.8769, -3.1427, 1.2046),
        (2.8366, -3.0525, 1.2012),
    ],
    "polar_express": [
        (8.2051, -22.9019, 16.4607),
        (4.0664, -2.8612, 0.5184),
        (3.9096, -2.8234, 0.5250),
        (3.2856, -2.4647, 0.5074),
        (2.2779, -1.6447, 0.4162),
        (1.8726, -1.2307, 0.3585),
        (1.8564, -1.2132, 0.3568),
        (1.8750, -1.2500, 0.3750),
    ],
    "aol": [(4.0098, -7.0585, 2.4635), (3.4585, -5.5479, 2.5959), (2.7573, -3.2939, 1.4254), (2.7215, -3.0494, 1.3169)],
}


def make_inputs(ctx: InputContext):
    W = ctx.world_size
    C = -(-(1024 if ctx.N >= 4096 else 512) // W) * W
    ctx.seed(ctx.rank)
    x = torch.randn(ROWS, C // W, dtype=torch.bfloat16, device=ctx.device) + 0.01 * ctx.rank
    return x, 5, "quintic", 1, None


@torch.no_grad()
def solution(x, steps=5, coefficient_type="quintic", partition_dim=1, group=None):
    if x.dim() != 2:
        raise ValueError("x must be 2-D")
    if coefficient_type not in COEFFICIENTS:
        raise ValueError(f"unknown coefficient_type {coefficient_type!r}")
    coefficients = COEFFICIENTS[coefficient_type]
    if steps % len(coefficients):
        raise ValueError(f"steps={steps} is not a multiple of {len(coefficients)} for {coefficient_type!r}")
    if partition_dim not in (0, 1):
        raise ValueError(f"partition_dim must be 0 or 1, got {partition_dim}")
    X = (x.t() if partition_dim == 0 else x).float()
    norm_sq = X.pow(2).sum()
    dist.all_reduce(norm_sq, op=dist.ReduceOp.SUM, group=group)
    X = X / norm_sq.sqrt().clamp_min(1e-7)
    for step in range(steps):
        a, b, c = coefficients[step % len(coefficients)]
        gram = X @ X.t()
        dist.all_reduce(gram, op=dist.ReduceOp.SUM, group=group)
        X = a * X + (b * gram + c * (gram @ gram)) @ X
    X = X.to(x.dtype)
    return (X.t() if partition_dim == 0 else X).contiguous()


PROBLEM = Problem(id=86, make_inputs=make_inputs, solution=solution)
