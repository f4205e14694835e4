"""80 dinov2_distributed_sinkhorn_knopp: DINOv2 / iBOT distributed Sinkhorn-Knopp teacher centering (masked-patch
variant): samples are sharded by rank, the total mass and the prototype-wise sums are all-reduced.

Interface as PKB: ``solution(teacher_output (Bl, 16384) fp32, teacher_temp, n_masked_patches_tensor (1,) int64,
n_iterations=3, group=None) -> (Bl, 16384) fp32`` (rank-specific, contiguous), Bl = max(512, min(M, 1024)). All
arithmetic is fp32 whatever D is.

Decisions (spec Pitfalls):
- Vacuous check: every output is ~1/16384 = 6e-5, far below atol = 1e-2, so zeros pass PKB's check. We compare
  with rtol = 1e-2 and atol = 0: outputs are strictly positive, fp32 reordering errors are ~1e-6 relative, and
  zeros, the input, or a uniform answer fail everywhere.
- PKB's teacher logits (N(0, 1) * 0.01 / 0.07) make Q = exp(.) vary by only ~14%, so the global row sums differ
  from a rank's local ones by ~0.4% and a no-communication answer would pass even a relative 1e-2 check. We draw
  teacher_output = N(0, 1) * 0.1 (logits of std ~1.4, still far from fp32 overflow): the prototype normalization
  then matters at the percent level and a local-only answer fails.
- Reduced (CPU development only): 2048 prototypes instead of 16384 (the fp32 (Bl, P) tensors of a W = 4 CPU world
  and their float64 checks otherwise dominate the test machine's memory traffic).
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem

PROTOTYPES = 16384


def make_inputs(ctx: InputContext):
    Bl = max(512, min(ctx.M, 1024))
    prototypes = 2048 if ctx.reduced else PROTOTYPES
    ctx.seed(ctx.rank)
    teacher_output = torch.randn(Bl, prototypes, dtype=torch.float32, device=ctx.device) * 0.1
    n_masked = torch.tensor([Bl], dtype=torch.int64, device=ctx.device)
    return teacher_output, 0.07, n_masked, 3, None


@torch.no_grad()
def solution(teacher_output, teacher_temp, n_masked_patches_tensor, n_iterations=3, group=None):
    Q = torch.exp(teacher_output.float() / teacher_temp).t()  # (P, Bl) view, as PKB
    total = n_masked_patches_tensor.to(torch.float32).sum()
    dist.all_reduce(total, op=dist.ReduceOp.SUM, group=group)
    prototypes = Q.shape[0]
    mass = Q.sum()
    dist.all_reduce(mass, op=dist.ReduceOp.SUM, group=group)
    Q /= mass
    for _ in range(n_iterations):
        rows = Q.sum(dim=1, keepdim=True)
        dist.all_reduce(rows, op=dist.ReduceOp.SUM, group=group)
        Q /= rows
        Q /= prototypes
        Q /= Q.sum(dim=0, keepdim=True)
        Q /= total
    Q *= total
    return Q.t().contiguous()


PROBLEM = Problem(id=80, make_inputs=make_inputs, solution=solution, atol=0.0, rtol=1e-2)
