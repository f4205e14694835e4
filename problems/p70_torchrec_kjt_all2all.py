"""70 torchrec_kjt_all2all: KeyedJaggedTensor all-to-all for table-wise sharded sparse features (splits exchange,
lengths/values exchange, recat to feature-major order).

Interface as PKB: ``solution(lengths (F*B,) i64, values (sum lengths,) i64, key_splits, batch_size B, pg=None,
weights=None, stride_per_key=None, stagger=1) -> {"lengths", "values", "stride", "stride_per_rank"}``. Rank j owns
key_splits[j] = 1 + (j mod 3) consecutive features; lengths are feature-major (entry f*B + b), values jagged in the
same order. A 3W int64 metadata all_to_all_single (lengths split, values split, batch size per destination) is
followed by two asynchronous all_to_all_single (lengths, values); the received [source][local feature] segments
are then permuted to [local feature][source] (recat). stride = sum of the sources' batch sizes (0-dim int64),
stride_per_rank = those batch sizes (W,). B = max(512, min(M // W, 1024)); lengths uniform in [5, 20], values
uniform in [0, 1e6).

Decisions (spec Pitfalls):
- Pure data movement, compared exactly (PKB's float check tolerated about +-1e4 on the values); a source-major
  answer (no recat), zeros or this rank's own features alone fail.
- Only the path PKB exercises is implemented: fixed stride per key and stagger = 1 raise otherwise; per-value
  weights, if given, travel and are permuted like the values (returned under "weights").
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    W = ctx.world_size
    key_splits = [1 + j % 3 for j in range(W)]
    B = max(512, min(ctx.M // W, 1024))
    ctx.seed(ctx.rank)
    lengths = torch.randint(5, 21, (sum(key_splits), B), device=ctx.device).reshape(-1)
    values = torch.randint(0, 1_000_000, (int(lengths.sum()),), device=ctx.device)
    return lengths, values, key_splits, B, None


def permute_segments(data: torch.Tensor, sizes: torch.Tensor, order: list[int]) -> torch.Tensor:
    """Concatenate the segments of ``data`` (lengths ``sizes``) in the given order."""
    starts = torch.cumsum(sizes, 0) - sizes
    order = torch.tensor(order, dtype=torch.long, device=data.device)
    new_sizes = sizes[order]
    segment = torch.repeat_interleave(order, new_sizes)
    offset = torch.arange(int(new_sizes.sum()), device=data.device) - torch.repeat_interleave(
        torch.cumsum(new_sizes, 0) - new_sizes, new_sizes
    )
    return data[starts[segment] + offset]


@torch.no_grad()
def solution(lengths, values, key_splits, batch_size, pg=None, weights=None, stride_per_key=None, stagger=1):
    if stride_per_key is not None or stagger != 1:
        raise NotImplementedError("only the fixed-stride, stagger = 1 path is part of this workload")
    W, rank = dist.get_world_size(pg), dist.get_rank(pg)
    dev = lengths.device
    F, B = sum(key_splits), batch_size
    # 1. Split bookkeeping: features [first_j, first_j + key_splits[j]) go to rank j.
    per_key = lengths.view(F, B).sum(dim=1)
    length_splits = [k * B for k in key_splits]
    value_splits = [int(part.sum()) for part in per_key.split(key_splits)]
    # 2. Metadata: (lengths split, values split, batch size) per destination.
    meta = torch.tensor([length_splits, value_splits, [B] * W], dtype=torch.int64, device=dev).T.reshape(-1)
    recv_meta = torch.empty_like(meta)
    dist.all_to_all_single(recv_meta, meta, group=pg)
    recv_lengths_split, recv_values_split, batch_sizes = recv_meta.view(W, 3).T.tolist()
    # 3. Lengths and values (and weights), asynchronously.
    recv_lengths = lengths.new_empty(sum(recv_lengths_split))
    recv_values = values.new_empty(sum(recv_values_split))
    works = [
        dist.all_to_all_single(recv_lengths, lengths, recv_lengths_split, length_splits, group=pg, async_op=True),
        dist.all_to_all_single(recv_values, values, recv_values_split, value_splits, group=pg, async_op=True),
    ]
    if weights is not None:
        recv_weights = weights.new_empty(sum(recv_values_split))
        works.append(
            dist.all_to_all_single(recv_weights, weights, recv_values_split, value_splits, group=pg, async_op=True)
        )
    for work in works:
        work.wait()
    # 4. Recat: segment s*k + f (source s, local feature f, B_s lengths) moves to position f*W + s.
    k = key_splits[rank]
    segment_lengths = torch.tensor([B_s for B_s in batch_sizes for _ in range(k)], dtype=torch.long, device=dev)
    order = [s * k + f for f in range(k) for s in range(W)]
    segment_of = torch.repeat_interleave(torch.arange(len(segment_lengths), device=dev), segment_lengths)
    value_counts = torch.zeros_like(segment_lengths).index_add_(0, segment_of, recv_lengths)
    out = {
        "lengths": permute_segments(recv_lengths, segment_lengths, order),
        "values": permute_segments(recv_values, value_counts, order),
        "stride": torch.tensor(sum(batch_sizes), dtype=torch.int64, device=dev),
        "stride_per_rank": torch.tensor(batch_sizes, dtype=torch.int64, device=dev),
    }
    if weights is not None:
        out["weights"] = permute_segments(recv_weights, value_counts, order)
    return out


PROBLEM = Problem(id=70, make_inputs=make_inputs, solution=solution)
