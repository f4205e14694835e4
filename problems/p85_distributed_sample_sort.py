"""85 distributed_sample_sort: distributed sample sort (regular sampling, splitters by a strict total order, bucket
all-to-all, local merge) followed by an exact rebalance to the balanced block sizes.

Interface as PKB: ``solution(local_shard (n,) D, group=None) -> 1-D D``: rank r returns positions
[r*base + min(r, extra), ... + base + (r < extra)) of the globally sorted multiset, base, extra = divmod(total, W),
also when its own input is empty. n = max(4W, min(M div W, 4096)), and n = 0 on odd ranks when trial mod 4 == 3.

Decisions (spec Pitfalls):
- Exact check (atol = rtol = 0): the output is fully determined by the multiset of input values and sorting does
  no arithmetic, so any correct answer is bitwise equal. PKB's rtol = 1e-2 lets values drift by up to ~9.
- PKB's shards have disjoint, rank-decreasing value ranges, so the bucket exchange just reverses the data and the
  rebalance moves nothing. We draw overlapping ranges, uniform integers in [-2n, 2n) shifted by -r*(n div 2) and
  rounded to D (in bf16 many values collide beyond 256): buckets come out uneven, ties cross ranks, and the
  rebalance really moves data. The shapes and the empty-shard rule are PKB's.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem


def shard_length(ctx: InputContext) -> int:
    W = ctx.world_size
    if ctx.trial % 4 == 3 and ctx.rank % 2 == 1:
        return 0
    return max(4 * W, min(ctx.M // W, 4096))


def make_inputs(ctx: InputContext):
    n = shard_length(ctx)
    ctx.seed(ctx.rank)
    span = 2 * max(1, n)
    values = torch.randint(-span, span, (n,), device=ctx.device).to(ctx.dtype)
    return (values - ctx.rank * (max(1, n) // 2),)


def _all_gather_ints(values: list[int], group, device) -> list[int]:
    mine = torch.tensor(values, dtype=torch.int64, device=device)
    parts = [torch.empty_like(mine) for _ in range(dist.get_world_size(group))]
    dist.all_gather(parts, mine, group=group)
    return torch.cat(parts).tolist()


def _all_to_all_v(data: torch.Tensor, send_counts: list[int], group) -> torch.Tensor:
    """Variable all-to-all: exchange the counts first, then the data."""
    send = torch.tensor(send_counts, dtype=torch.int64, device=data.device)
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=group)
    recv_counts = recv.tolist()
    out = torch.empty(sum(recv_counts), dtype=data.dtype, device=data.device)
    dist.all_to_all_single(out, data, recv_counts, send_counts, group=group)
    return out


def _overlap(a0: int, a1: int, b0: int, b1: int) -> int:
    return max(0, min(a1, b1) - max(a0, b0))


@torch.no_grad()
def solution(local_shard, group=None):
    W, rank = dist.get_world_size(group), dist.get_rank(group)
    device, dtype = local_shard.device, local_shard.dtype
    sizes = _all_gather_ints([local_shard.numel()], group, device)
    total, n = sum(sizes), sizes[rank]
    active = [i for i in range(W) if sizes[i] > 0]
    A = len(active)
    if A == 0:
        return local_shard.clone()
    local = torch.sort(local_shard).values
    me = active.index(rank) if n > 0 else -1  # sort-rank

    # Regular samples, W slots per rank (unused slots are +inf with owner -1).
    values = torch.full((W,), float("inf"), dtype=dtype, device=device)
    owners = torch.full((W,), -1, dtype=torch.int64, device=device)
    positions = torch.full((W,), -1, dtype=torch.int64, device=device)
    if n > 0:
        picks = [(i + 1) * n // A - 1 for i in range(A)] if A < n else list(range(n))
        index = torch.tensor(picks, dtype=torch.int64, device=device)
        values[: len(picks)], owners[: len(picks)], positions[: len(picks)] = local[index], me, index
    gathered = []
    for tensor in (values, owners, positions):
        parts = [torch.empty_like(tensor) for _ in range(W)]
        dist.all_gather(parts, tensor, group=group)
        gathered.append(torch.cat(parts))
    valid = gathered[1] >= 0
    s_val, s_own, s_pos = (t[valid] for t in gathered)
    order = torch.argsort(s_pos, stable=True)  # lexicographic (value, sort-rank, position) by stable passes
    order = order[torch.argsort(s_own[order], stable=True)]
    order = order[torch.argsort(s_val[order].float(), stable=True)]
    U = len(order)
    splitters = [order[min(max((k + 1) * U // A - 1, 0), U - 1)].item() for k in range(A - 1)]

    # Cut the local data at each splitter, ties broken by the same total order, and send bucket b to active rank b.
    send_counts = [0] * W
    if n > 0:
        keys = local.float()
        cuts = [0]
        for s in splitters:
            v, o, p = s_val[s].float().view(1), s_own[s].item(), s_pos[s].item()
            if me > o:
                cuts.append(int(torch.searchsorted(keys, v, right=False)))
            elif me < o:
                cuts.append(int(torch.searchsorted(keys, v, right=True)))
            else:
                cuts.append(p + 1)
        cuts.append(n)
        for b in range(A):
            send_counts[active[b]] = cuts[b + 1] - cuts[b]
    merged = torch.sort(_all_to_all_v(local, send_counts, group)).values

    # Rebalance: send each destination the part of this bucket that falls in its balanced range.
    merged_sizes = _all_gather_ints([merged.numel()], group, device)
    offset = sum(merged_sizes[:rank])
    base, extra = divmod(total, W)
    starts = [j * base + min(j, extra) for j in range(W + 1)]
    counts = [_overlap(offset, offset + merged.numel(), starts[j], starts[j + 1]) for j in range(W)]
    return _all_to_all_v(merged, counts, group)


PROBLEM = Problem(id=85, make_inputs=make_inputs, solution=solution, atol=0.0, rtol=0.0)
