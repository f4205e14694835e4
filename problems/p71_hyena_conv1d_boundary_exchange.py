"""71 hyena_conv1d_boundary_exchange: zigzag context-parallel causal depthwise conv1d with a halo exchange between
neighbour ranks.

Interface as PKB: ``solution(x (1, 1024, 2048) D, weight (1024, 1, 7) D, group=None) -> (1, 1024, 2048) D`` in x's
zigzag layout: rank r holds chunk r ("a", first half) and chunk 2W-1-r ("b", second half) of a global sequence of 2W
chunks of 1024. One batch_isend_irecv moves the last 6 samples of each chunk: a's left context comes from rank r-1
(zeros on rank 0), b's from rank r+1 (on the last rank its own a, which precedes it globally). Then a depthwise
causal 7-tap cross-correlation (no padding, no bias) of both chunks with this rank's own filter, in D.

Decisions (spec Pitfalls):
- World size W >= 2, as PKB's rule says: its reference crashes at W = 1 (batch_isend_irecv with no ops).
- weight is drawn per rank (not replicated), as PKB.
- The output is one rounding of a 7-term sum, so the default atol = rtol = 1e-2 holds; zeros, x itself (same shape)
  and zero halos (no communication: only the first 6 columns of each chunk differ, by O(1)) all fail.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.base import InputContext, Problem

CHANNELS, KERNEL, CHUNK = 1024, 7, 1024


def make_inputs(ctx: InputContext):
    ctx.seed(ctx.rank)
    x = torch.randn(1, CHANNELS, 2 * CHUNK, dtype=ctx.dtype, device=ctx.device)
    weight = torch.randn(CHANNELS, 1, KERNEL, dtype=ctx.dtype, device=ctx.device)
    return x, weight, None


@torch.no_grad()
def solution(x, weight, group=None):
    W, rank = dist.get_world_size(group), dist.get_rank(group)
    peer = (lambda r: dist.get_global_rank(group, r)) if group is not None else (lambda r: r)
    chunk = x.shape[-1] // 2
    pad = weight.shape[-1] - 1
    a, b = x[..., :chunk], x[..., chunk:]
    a_tail, b_tail = a[..., -pad:].contiguous(), b[..., -pad:].contiguous()
    a_ctx = torch.zeros_like(a_tail)  # rank 0: the global sequence starts here
    b_ctx = torch.empty_like(b_tail)
    ops = []
    if rank > 0:
        ops.append(dist.P2POp(dist.irecv, a_ctx, peer(rank - 1), group))
    if rank < W - 1:
        ops.append(dist.P2POp(dist.isend, a_tail, peer(rank + 1), group))
        ops.append(dist.P2POp(dist.irecv, b_ctx, peer(rank + 1), group))
    if rank > 0:
        ops.append(dist.P2POp(dist.isend, b_tail, peer(rank - 1), group))
    for request in dist.batch_isend_irecv(ops):
        request.wait()
    if rank == W - 1:
        b_ctx = a_tail  # chunk W-1 (this rank's a) precedes chunk W (its b)
    batch = torch.cat([torch.cat([a_ctx, a], dim=-1), torch.cat([b_ctx, b], dim=-1)], dim=0)
    y = F.conv1d(batch, weight, groups=weight.shape[0])
    n = x.shape[0]
    return torch.cat([y[:n], y[n:]], dim=-1)


PROBLEM = Problem(id=71, make_inputs=make_inputs, solution=solution, allows_world_size=lambda W: W >= 2)
