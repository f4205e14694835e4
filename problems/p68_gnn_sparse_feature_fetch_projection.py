"""68 gnn_sparse_feature_fetch_projection: sparse fetch of rows from a range-sharded embedding table (request ids,
receive rows), then a dense projection.

Interface as PKB: ``solution(local_embedding_shard (Nt/W, E) D, input_node_ids (Q,) i64, proj_matrix (E, E) D,
num_total_nodes Nt, group=None) -> (Q, E) D`` with out[q] = T[id_q] @ proj_matrix_r, T the concatenation of all
shards in rank order and proj_matrix this rank's own (per-rank, not replicated). The ids are routed to their owner
min(id // ceil(Nt/W), W - 1) after a stable sort by owner (count exchange, then two all_to_all_single), the rows
come back with the reversed splits, the sort is undone, and the bf16 GEMM accumulates in fp32.
Nt = roundup(max(111e6, M), W), E = 256 if N >= 256 else 128, Q = max(20000, min(M // W, 200000)); the ids are
PKB's deterministic pattern: owner (q + r) mod W, local row (7q + r) mod shard.

Decisions (spec Pitfalls):
- Only with ``ctx.reduced`` (CPU development runs) Nt = roundup(max(16384, M), W) and Q = max(1024, min(M // W,
  200000)): the real table is 56.8 GB in all (7.1 GB per rank at W = 8). The judge never sets ``reduced`` on GPU
  hosts, so W is limited there only by GPU memory (the table plus the harness's clone of it).
- Only the rows an id can address are drawn: (7q + r) mod shard < 7Q + W, so rows [0, min(shard, 7Q + W)) of each
  shard are standard normal and the rest are zeros. No correct output depends on the other rows, and drawing all
  56.8 GB for every timed call (each call has a fresh input set) was most of 68's judge overhead (docs/calibration.md,
  Throughput); zeroing them costs a memset. The shapes, the ids and the access pattern are PKB's.
- The output is one bf16 rounding of a 256-term fp32 dot product (values of order 16), so the default
  atol = rtol = 1e-2 holds for any accumulation order; zeros or rows fetched from the local shard alone fail.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem


def roundup(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def make_inputs(ctx: InputContext):
    W, rank, dev = ctx.world_size, ctx.rank, ctx.device
    total = roundup(max(16384 if ctx.reduced else 111_000_000, ctx.M), W)
    shard = total // W
    E = 256 if ctx.N >= 256 else 128
    Q = max(1024 if ctx.reduced else 20000, min(ctx.M // W, 200000))
    ctx.seed(rank)
    table = torch.zeros(shard, E, dtype=ctx.dtype, device=dev)
    addressable = min(shard, 7 * Q + W)  # every (7q + r) mod shard for q < Q, r < W
    table[:addressable] = torch.randn(addressable, E, dtype=ctx.dtype, device=dev)
    proj = torch.randn(E, E, dtype=ctx.dtype, device=dev)
    q = torch.arange(Q, device=dev)
    ids = ((q + rank) % W) * shard + (7 * q + rank) % shard
    return table, ids, proj, total, None


@torch.no_grad()
def solution(local_embedding_shard, input_node_ids, proj_matrix, num_total_nodes, group=None):
    W, rank = dist.get_world_size(group), dist.get_rank(group)
    shard = -(-num_total_nodes // W)
    owner = torch.clamp(input_node_ids // shard, max=W - 1)
    order = torch.sort(owner, stable=True).indices
    send_counts = torch.bincount(owner, minlength=W)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts, group=group)
    sent, received = send_counts.tolist(), recv_counts.tolist()
    asked = input_node_ids.new_empty(sum(received))
    dist.all_to_all_single(asked, input_node_ids[order], received, sent, group=group)
    rows = local_embedding_shard[asked - rank * shard]
    fetched = rows.new_empty(len(input_node_ids), rows.shape[1])
    dist.all_to_all_single(fetched, rows, sent, received, group=group)
    embeddings = torch.empty_like(fetched)
    embeddings[order] = fetched
    return embeddings @ proj_matrix


PROBLEM = Problem(id=68, make_inputs=make_inputs, solution=solution, timed_arg="local_embedding_shard")
