"""48 fsdp_and_tp: 2-D FSDP x TP SwiGLU MLP forward: all-gather the weight shards over FSDP, column/row-parallel
SwiGLU over TP, all-reduce of the TP partials.

Interface as PKB: ``solution(x_local (B_fsdp, D), W1_shard (D/n_fsdp, D_ff/n_tp), W2_shard (same),
W3_shard (D_ff/n_tp, D/n_fsdp), n_tp: int, n_fsdp: int) -> y (B_fsdp, D)`` in D, identical within a TP group.
n_tp is the first divisor of W in 2..W-1 with W/n_tp >= 2, else 1; rank r has t = r % n_tp, f = r // n_tp; TP groups
are contiguous {f*n_tp, ...}, FSDP groups strided {t, t + n_tp, ...}. No groups are passed: the reference makes them.

Decisions:
- Process groups (spec Pitfalls): PKB creates all n_fsdp TP groups and then all n_tp FSDP groups on EVERY call,
  never freeing them (about 1200 communicators over a timing run), so its time is dominated by communicator set-up.
  Our reference creates them in the same order on its first call (every rank, collectively) and reuses them while
  the default group lives, so speedups measure kernels, not set-up. Candidates may still build groups per call.
- Numerically brittle check (spec Pitfalls): weights are unscaled randn (kept), so |y| has std ~ 5800 and any other
  GEMM order or rounding point left thousands of elements outside atol + rtol*|y| near y = 0. The check adds an
  absolute slack relative to the output's size: slack = (0.04 + 3 (n_tp - 1) 2^-8) * rms(y). Measured at the
  default shape: full fp32 math and a fused fp32 silu*mul exceed rtol*|y| by at most 1.8% of rms(y); the second
  term covers a bf16 TP all-reduce in any order for n_tp >= 3. Zeros, one TP partial (no all-reduce, off by the
  other partial, ~rms/sqrt(2)) and unsharded/ungathered weights miss by O(rms).
- The TP all-reduce sums fp32 copies of the partials and rounds once (for n_tp = 2 this equals NCCL's bf16 sum of
  two values; for n_tp >= 3 it is the order-free value the slack is centred on).
"""

import math

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.base import InputContext, Problem


def factors(W: int) -> tuple[int, int]:
    for n_tp in range(2, W):
        if W % n_tp == 0 and W // n_tp >= 2:
            return n_tp, W // n_tp
    return 1, W


def shape(M: int, N: int, n_tp: int, n_fsdp: int) -> tuple[int, int, int]:
    d_model = -(-min(max(N, 32), 256) // math.lcm(n_tp, n_fsdp)) * math.lcm(n_tp, n_fsdp)
    d_ff = -(-max(64, M) // n_tp) * n_tp
    batch = -(-max(2 * M, 2 * n_tp * n_fsdp) // n_fsdp) * n_fsdp
    return d_model, d_ff, batch


def make_inputs(ctx: InputContext):
    n_tp, n_fsdp = factors(ctx.world_size)
    t, f = ctx.rank % n_tp, ctx.rank // n_tp
    d_model, d_ff, batch = shape(ctx.M, ctx.N, n_tp, n_fsdp)
    ctx.seed("shared")  # one model and one global batch; each rank keeps its blocks
    full_x = torch.randn(batch, d_model, dtype=ctx.dtype, device=ctx.device)
    W1 = torch.randn(d_model, d_ff, dtype=ctx.dtype, device=ctx.device)
    W2 = torch.randn(d_model, d_ff, dtype=ctx.dtype, device=ctx.device)
    W3 = torch.randn(d_ff, d_model, dtype=ctx.dtype, device=ctx.device)
    rows = slice(f * batch // n_fsdp, (f + 1) * batch // n_fsdp)
    d_block = slice(f * d_model // n_fsdp, (f + 1) * d_model // n_fsdp)
    ff_block = slice(t * d_ff // n_tp, (t + 1) * d_ff // n_tp)
    return (
        full_x[rows].contiguous(),
        W1[d_block, ff_block].contiguous(),
        W2[d_block, ff_block].contiguous(),
        W3[ff_block, d_block].contiguous(),
        n_tp,
        n_fsdp,
    )


_GROUPS: dict = {}


def _groups(n_tp: int, n_fsdp: int):
    """(TP group, FSDP group) of this rank, created once per default group, TP groups first as in PKB."""
    world = dist.group.WORLD
    cached = _GROUPS.get((n_tp, n_fsdp))
    if cached is None or cached[0] is not world:
        W = n_tp * n_fsdp
        tp = [dist.new_group(list(range(f * n_tp, (f + 1) * n_tp))) for f in range(n_fsdp)]
        fsdp = [dist.new_group(list(range(t, W, n_tp))) for t in range(n_tp)]
        cached = _GROUPS[(n_tp, n_fsdp)] = (world, tp, fsdp)
    rank = dist.get_rank()
    return cached[1][rank // n_tp], cached[2][rank % n_tp]


@torch.no_grad()
def solution(x_local, W1_shard, W2_shard, W3_shard, n_tp: int, n_fsdp: int):
    assert dist.get_world_size() == n_tp * n_fsdp
    tp_group, fsdp_group = _groups(n_tp, n_fsdp)

    def gather(shard, dim):
        parts = [torch.empty_like(shard) for _ in range(n_fsdp)]
        dist.all_gather(parts, shard, group=fsdp_group)
        return torch.cat(parts, dim=dim)

    W1c, W2c, W3r = gather(W1_shard, 0), gather(W2_shard, 0), gather(W3_shard, 1)
    z = F.silu(x_local @ W1c) * (x_local @ W2c)
    y = (z @ W3r).float()
    dist.all_reduce(y, op=dist.ReduceOp.SUM, group=tp_group)
    return y.to(x_local.dtype)


def slack(expected: torch.Tensor, W: int) -> float:
    n_tp, _ = factors(W)
    rms = expected.detach().float().pow(2).mean().sqrt().item()
    return (0.04 + 3.0 * (n_tp - 1) * 2.0**-8) * rms


PROBLEM = Problem(id=48, make_inputs=make_inputs, solution=solution, slack=slack)
