"""69 gnn_negative_scoring: rank of each positive score among its negatives, after an all-gather-v (size all_reduce
plus all_to_all_single) of every rank's scores.

Interface as PKB: ``solution(local_pos_scores (P_r,) D, local_neg_scores (P_r, K) D, group=None) -> (P_tot,) i64``,
identical on every rank: the blocks of all ranks in rank order, S = [pos | neg], sigma = sigmoid(S) in D, and the
rank of the positive = 1 + its position in the row sorted descending. P_r = max(16, min(M // W, 1280)) + r mod 3
(ragged), K = max(100, min(N, 1000)); scores standard normal.

Decisions (spec Pitfalls):
- Ties decide the answer (after the bf16 sigmoid most rows have negatives equal to the positive). We fix the rule
  explicitly instead of relying on sort internals: a STABLE descending sort, so the positive (column 0) comes
  before the negatives it ties with, i.e. rank = 1 + #{j : sigmoid(neg_j) > sigmoid(pos)} on the D-rounded
  sigmoids. This is what PKB's CUDA sort does; PyTorch's default CPU sort is not stable and placed the positive
  inside its ties.
- The ranks are compared as PKB does, as numbers with atol = rtol = 1e-2 (our judge otherwise compares integer
  tensors exactly): small ranks must be exact, a rank near 500 may be off by about 5, which absorbs a rare
  one-ulp difference between sigmoid implementations. Shapes and the int64 dtype must match exactly. Zeros and a
  no-communication answer (this rank's rows only: wrong length) fail; so does a sigmoid kept in fp32 (ties broken
  differently), as in PKB.
- W = 1 skips all communication.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    rows = max(16, min(ctx.M // ctx.world_size, 1280)) + ctx.rank % 3
    K = max(100, min(ctx.N, 1000))
    ctx.seed(ctx.rank)
    pos = torch.randn(rows, dtype=ctx.dtype, device=ctx.device)
    neg = torch.randn(rows, K, dtype=ctx.dtype, device=ctx.device)
    return pos, neg, None


def broadcast(block: torch.Tensor, group) -> torch.Tensor:
    """Every rank's block, concatenated in rank order (GraphStorm's broadcast_data)."""
    W, rank = dist.get_world_size(group), dist.get_rank(group)
    if W == 1:
        return block
    sizes = torch.zeros(W, dtype=torch.int64, device=block.device)
    sizes[rank] = block.shape[0]
    dist.all_reduce(sizes, op=dist.ReduceOp.SUM, group=group)
    sizes = sizes.tolist()
    out = block.new_empty(sum(sizes), *block.shape[1:])
    dist.all_to_all_single(out, torch.cat([block] * W), sizes, [block.shape[0]] * W, group=group)
    return out


@torch.no_grad()
def solution(local_pos_scores, local_neg_scores, group=None):
    pos = broadcast(local_pos_scores, group)
    neg = broadcast(local_neg_scores, group)
    probs = torch.sigmoid(torch.cat([pos[:, None], neg], dim=1))
    order = torch.sort(probs, dim=1, descending=True, stable=True).indices
    return (order == 0).nonzero()[:, 1] + 1


def compare(expected, actual, W):
    """PKB's check of the ranks: as numbers at atol = rtol = 1e-2; shape and dtype exact."""
    from problems.tolerance import compare as compare_outputs

    if type(actual) is not torch.Tensor or actual.shape != expected.shape or actual.dtype != expected.dtype:
        got = f"{actual.dtype} {tuple(actual.shape)}" if isinstance(actual, torch.Tensor) else type(actual).__name__
        return f"expected {expected.dtype} {tuple(expected.shape)}, got {got}"
    result = compare_outputs(expected.double(), actual.double(), 1e-2, 1e-2)
    return None if result.ok else result.mismatch.message


PROBLEM = Problem(id=69, make_inputs=make_inputs, solution=solution, compare=compare)
