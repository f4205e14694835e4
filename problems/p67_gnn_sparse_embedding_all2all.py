"""67 gnn_sparse_embedding_all2all: sparse all-to-all "push" of (index, value) rows to their remainder owners.

Interface as PKB: ``solution(idx (nnz,) i64, value (nnz, hid) D, num_nodes, group=None) -> (recv_idx (R_r,) i64,
recv_value (R_r, hid) D)``: entry t goes to rank idx[t] mod W; rank r receives every entry it owns, ordered by source
rank, then by the source's original position (a stable sort by owner, a count exchange and two all_to_all_single).
num_nodes = roundup(max(100000, M), W), nnz = max(1024, min(M // W, 50000)), hid = max(8, min(N, 128)); idx uniform
in [0, num_nodes) (repeats allowed), value standard normal.

Decisions (spec Pitfalls):
- W = 1 returns the inputs themselves (the same tensor objects), as PKB: there the "inputs unchanged" answer IS
  correct, which is inherent to the workload; for W >= 2 it fails (wrong rows and, almost always, wrong length).
- Pure data movement, bit-exact: the default tolerances apply to the values, and the int64 indices are compared
  exactly (PKB's float check tolerated about +-1000 on them).
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem


def roundup(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def make_inputs(ctx: InputContext):
    W = ctx.world_size
    num_nodes = roundup(max(100000, ctx.M), W)
    nnz = max(1024, min(ctx.M // W, 50000))
    hid = max(8, min(ctx.N, 128))
    ctx.seed(ctx.rank)
    idx = torch.randint(0, num_nodes, (nnz,), device=ctx.device)
    value = torch.randn(nnz, hid, dtype=ctx.dtype, device=ctx.device)
    return idx, value, num_nodes, None


@torch.no_grad()
def solution(idx, value, num_nodes, group=None):
    W = dist.get_world_size(group)
    if W == 1:
        return idx, value
    owner = idx % W
    order = torch.sort(owner, stable=True).indices
    send_counts = torch.bincount(owner, minlength=W)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts, group=group)
    send_splits, recv_splits = send_counts.tolist(), recv_counts.tolist()
    total = sum(recv_splits)
    recv_idx = idx.new_empty(total)
    dist.all_to_all_single(recv_idx, idx[order], recv_splits, send_splits, group=group)
    recv_value = value.new_empty(total, value.shape[1])
    dist.all_to_all_single(recv_value, value[order], recv_splits, send_splits, group=group)
    return recv_idx, recv_value


PROBLEM = Problem(id=67, make_inputs=make_inputs, solution=solution)
