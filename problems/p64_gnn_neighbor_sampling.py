"""64 gnn_neighbor_sampling: distributed multi-hop "first-k" neighbor sampling with owner-routed requests.

Interface as PKB: ``solution(seed_nodes (S,) i64, fanouts=[10, 5], local_adj_row_ptr (n+1,) i64, local_adj_col
(16n,) i64, node_to_rank (n,) i64, group=None, replace=False) -> (node, row, col, edge)``, all int64. Per hop the
frontier is routed to the owners node_to_rank[v] = v mod W (seven all_to_all_single calls: request counts, ids,
reply totals, reply-count vector, neighbor ids, edge ids, per-request counts); an owner answers with the first
min(k, deg) entries of v's CSC column in ITS local_adj_col (edge ids ptr[v] + j); the requester reassembles them
in frontier order. node = the seeds then every new vertex in first-appearance order; row / col = positions in node
of each sampled neighbor / of the vertex it was sampled for; edge = the edge ids; hop-major, frontier order.
n = roundup(max(10000, min(M, 100000)), W), S = max(512, min(N // W, 2048)), degree 16 (ptr[v] = 16 v).

Decisions (spec Pitfalls):
- PKB replicates the whole graph on every rank, so the exchange is transparent and a no-communication answer is
  exactly right. We keep the interface (ptr and col of the full size on every rank) but only the OWNER's copy of a
  column is the graph: rank r's local_adj_col holds the true in-neighbors of the vertices it owns and random decoy
  neighbors for every other vertex. The reference reads a column only on its owner, as PKB's does, so its
  semantics are unchanged, while sampling from the local copy (no communication) now fails.
- The graph is random (the in-neighbors of v are 16 uniform vertices, drawn from a seed shared by all ranks)
  instead of PKB's v+1..v+16, and the seeds are S distinct random vertices per rank instead of r*S + i: the
  frontiers then overlap and repeat, which exercises the first-appearance deduplication and the relabeling.
- Integers are compared exactly (PKB's float check tolerated +-1% on ids); the order is part of the answer.
- ``replace`` is ignored (deterministic first-k sampling), as in PKB.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem

DEGREE = 16


def roundup(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def make_inputs(ctx: InputContext):
    W, rank, dev = ctx.world_size, ctx.rank, ctx.device
    n = roundup(max(10000, min(ctx.M, 100000)), W)
    S = max(512, min(ctx.N // W, 2048))
    node_to_rank = torch.arange(n, device=dev) % W
    row_ptr = torch.arange(n + 1, device=dev) * DEGREE
    ctx.seed("graph")
    graph = torch.randint(0, n, (n, DEGREE), device=dev)
    ctx.seed(rank)
    decoy = torch.randint(0, n, (n, DEGREE), device=dev)
    seeds = torch.randperm(n, device=dev)[:S]
    owned = (node_to_rank == rank)[:, None]
    local_col = torch.where(owned, graph, decoy).reshape(-1)
    return seeds, [10, 5], row_ptr, local_col, node_to_rank, None, False


def exchange(send: torch.Tensor, send_counts: torch.Tensor, recv_counts: torch.Tensor, group) -> torch.Tensor:
    """all_to_all_single with variable splits: ``send_counts[j]`` entries to rank j, ``recv_counts[j]`` from j."""
    out = send.new_empty(int(recv_counts.sum()))
    dist.all_to_all_single(out, send, recv_counts.tolist(), send_counts.tolist(), group=group)
    return out


def ragged_arange(counts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(segment index, offset inside the segment) of every element of segments of the given lengths."""
    segment = torch.repeat_interleave(torch.arange(len(counts), device=counts.device), counts)
    starts = torch.cumsum(counts, 0) - counts
    return segment, torch.arange(len(segment), device=counts.device) - starts[segment]


@torch.no_grad()
def solution(seed_nodes, fanouts, local_adj_row_ptr, local_adj_col, node_to_rank, group=None, replace=False):
    W = dist.get_world_size(group)
    ptr, adj = local_adj_row_ptr, local_adj_col
    position = torch.full((ptr.numel() - 1,), -1, dtype=torch.long, device=seed_nodes.device)
    nodes = seed_nodes.clone()
    position[nodes] = torch.arange(len(nodes), device=nodes.device)
    frontier = seed_nodes
    hops = []
    for k in fanouts:
        if frontier.numel() == 0:
            break
        # Requests: the frontier grouped by owner (stable), sent to the owners.
        owner = node_to_rank[frontier]
        order = torch.sort(owner, stable=True).indices
        send_counts = torch.bincount(owner, minlength=W)
        recv_counts = torch.empty_like(send_counts)
        dist.all_to_all_single(recv_counts, send_counts, group=group)
        asked = exchange(frontier[order], send_counts, recv_counts, group)
        # Owner side: the first t = min(k, deg) entries of each asked column, in arrival order.
        degree = ptr[asked + 1] - ptr[asked]
        taken = degree if k < 0 else degree.clamp(max=k)
        request, j = ragged_arange(taken)
        edge_ids = ptr[asked][request] + j
        neighbors = adj[edge_ids]
        source = torch.repeat_interleave(torch.arange(W, device=asked.device), recv_counts)
        reply_totals = torch.zeros(W, dtype=torch.long, device=asked.device).index_add_(0, source, taken)
        # Replies back to the requesters.
        incoming = torch.empty_like(reply_totals)
        dist.all_to_all_single(incoming, reply_totals, group=group)
        answered = torch.empty_like(recv_counts)
        dist.all_to_all_single(answered, recv_counts, group=group)
        got_neighbors = exchange(neighbors, reply_totals, incoming, group)
        got_edges = exchange(edge_ids, reply_totals, incoming, group)
        got_taken = exchange(taken, recv_counts, answered, group)
        # Reassemble in frontier order: the replies follow the owner-sorted request order.
        count = torch.empty_like(got_taken)
        count[order] = got_taken
        start = torch.empty_like(got_taken)
        start[order] = torch.cumsum(got_taken, 0) - got_taken
        which, offset = ragged_arange(count)
        picked = start[which] + offset
        out_node, out_edge, out_dst = got_neighbors[picked], got_edges[picked], frontier[which]
        if out_node.numel() == 0:
            break
        # New frontier: distinct sampled vertices not yet in `nodes`, in order of first appearance.
        unique, inverse = torch.unique(out_node, return_inverse=True)
        first = torch.full((len(unique),), len(out_node), dtype=torch.long, device=out_node.device)
        first.scatter_reduce_(0, inverse, torch.arange(len(out_node), device=out_node.device), reduce="amin")
        fresh = position[unique] < 0
        frontier = unique[fresh][torch.argsort(first[fresh])]
        position[frontier] = torch.arange(len(nodes), len(nodes) + len(frontier), device=nodes.device)
        nodes = torch.cat([nodes, frontier])
        hops.append((out_node, out_dst, out_edge))
    empty = seed_nodes.new_empty(0)
    node_all = torch.cat([h[0] for h in hops]) if hops else empty
    dst_all = torch.cat([h[1] for h in hops]) if hops else empty
    edge_all = torch.cat([h[2] for h in hops]) if hops else empty
    return nodes, position[node_all], position[dst_all], edge_all


PROBLEM = Problem(id=64, make_inputs=make_inputs, solution=solution)
