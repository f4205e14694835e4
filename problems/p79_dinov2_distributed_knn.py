"""79 dinov2_distributed_knn: DINOv2 distributed k-NN. For each owner in turn, its queries are broadcast, every rank
takes the top-k of its train shard, and the owner gathers and merges the candidate lists.

Interface as PKB: ``solution(test_features_rank (Lq, F) D, train_features_rank_T (F, Lt) D, train_labels_rank (1, Lt)
int64, max_k, group=None) -> (sims (Lq, k) D, labels (Lq, k) int64)`` for the rank's own queries, sorted by
descending similarity. Lq = max(32, min(M div 64, 256)), Lt = max(1024, min(16N div W, 16384)), F = 384 (768 for
N >= 4096, 1024 for N >= 8192), k = min(200, Lt); features are unit rows normalized in bf16; labels (r*Lt + j) mod 1000.

Decision (spec Pitfalls, ties): bf16 similarities tie constantly (69% of adjacent pairs in PKB's lists), so which
label sits at a tied position depends on tie-breaking and on the last bit of every similarity; PKB's check is in
effect an exact test of one GEMM's rounding. We keep the inputs and replace the check (``compare``):
- sims: shape, dtype and allclose at atol = rtol = 1e-2, as PKB;
- labels: shape and dtype, and at every position the candidate's label must be the label of an expected neighbour
  whose similarity lies within ``tie_window`` (2^-7 relative, one to two bf16 steps) of the candidate's similarity
  there. Positions whose similarity is within that window of the expected k-th similarity accept any label: the
  rows tied at the cut are not in the expected list, and any of them is a correct k-th neighbour.
A stable or unstable sort, an fp32 GEMM rounded to bf16 and one- or two-stage top-k all pass; a missing shard, a
wrong label away from a tie, or zeros fail.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.base import InputContext, Problem


def feature_dim(N: int) -> int:
    return 1024 if N >= 8192 else 768 if N >= 4096 else 384


def make_inputs(ctx: InputContext):
    W, r = ctx.world_size, ctx.rank
    Lq = max(32, min(ctx.M // 64, 256))
    Lt = max(1024, min(16 * ctx.N // W, 16384))
    Fd = feature_dim(ctx.N)
    ctx.seed(r)
    test = F.normalize(torch.randn(Lq, Fd, dtype=torch.bfloat16, device=ctx.device), dim=1, eps=1e-12)
    train = F.normalize(torch.randn(Lt, Fd, dtype=torch.bfloat16, device=ctx.device), dim=1, eps=1e-12)
    labels = ((r * Lt + torch.arange(Lt, device=ctx.device)) % 1000).view(1, Lt)
    return test.to(ctx.dtype), train.to(ctx.dtype).t().contiguous(), labels, min(200, Lt), None


@torch.no_grad()
def solution(test_features_rank, train_features_rank_T, train_labels_rank, max_k, group=None):
    if max_k > train_features_rank_T.shape[1]:
        raise ValueError(f"max_k={max_k} exceeds the local train size {train_features_rank_T.shape[1]}")
    W, rank = dist.get_world_size(group), dist.get_rank(group)
    device, dtype = test_features_rank.device, test_features_rank.dtype
    result = None
    for owner in range(W):
        src = owner if group is None else dist.get_global_rank(group, owner)
        shape = torch.tensor(test_features_rank.shape, dtype=torch.int64, device=device)
        dist.broadcast(shape, src=src, group=group)
        if rank == owner:
            queries = test_features_rank
        else:
            queries = torch.empty(shape.tolist(), dtype=dtype, device=device)
        dist.broadcast(queries, src=src, group=group)

        sims, index = (queries @ train_features_rank_T).topk(max_k, dim=1, largest=True, sorted=True)
        labels = train_labels_rank.expand(queries.shape[0], -1).gather(1, index)

        sims_all = [torch.empty_like(sims) for _ in range(W)] if rank == owner else None
        labels_all = [torch.empty_like(labels) for _ in range(W)] if rank == owner else None
        dist.gather(sims, sims_all, dst=src, group=group)
        dist.gather(labels, labels_all, dst=src, group=group)
        if rank == owner:
            merged, pick = torch.cat(sims_all, dim=1).topk(max_k, dim=1, largest=True, sorted=True)
            result = (merged, torch.cat(labels_all, dim=1).gather(1, pick))
    return result


def tie_window(sims: torch.Tensor) -> torch.Tensor:
    """How far apart two similarities may be and still count as tied: ~1-2 steps of a 16-bit float, else tiny."""
    rel = 2.0**-7 if sims.dtype in (torch.bfloat16, torch.float16) else 1e-5
    return sims.double().abs() * rel + 1e-12


def compare(expected, actual, world_size):
    if not isinstance(actual, (tuple, list)) or len(actual) != 2:
        return "expected a tuple (sims, labels)"
    (sims_e, labels_e), (sims_a, labels_a) = expected, actual
    for name, e, a in (("sims", sims_e, sims_a), ("labels", labels_e, labels_a)):
        if type(a) is not torch.Tensor:
            return f"{name}: expected a torch.Tensor, got {type(a).__name__}"
        if a.shape != e.shape or a.dtype != e.dtype:
            return f"{name}: got {tuple(a.shape)} {a.dtype}, expected {tuple(e.shape)} {e.dtype}"
    sims_e, sims_a = sims_e.cpu(), sims_a.cpu()
    labels_e, labels_a = labels_e.cpu(), labels_a.cpu()
    e, a = sims_e.double(), sims_a.double()
    bad = ~(a - e).abs().le(1e-2 + 1e-2 * e.abs()) | ~torch.isfinite(a)
    if bad.any():
        row, col = bad.nonzero()[0].tolist()
        return (
            f"sims: {int(bad.sum())} of {e.numel()} elements outside atol=rtol=1e-2; first at [{row}, {col}]: "
            f"got {a[row, col].item():.6g}, expected {e[row, col].item():.6g}"
        )
    window = tie_window(sims_a)  # (Lq, k), per candidate position
    near = (a.unsqueeze(2) - e.unsqueeze(1)).abs() <= window.unsqueeze(2)  # [row, cand pos, expected pos]
    same = labels_a.unsqueeze(2) == labels_e.unsqueeze(1)
    at_cut = a <= e[:, -1:] + window
    wrong = ~((near & same).any(dim=2) | at_cut)
    if wrong.any():
        row, col = wrong.nonzero()[0].tolist()
        return (
            f"labels: {int(wrong.sum())} of {e.numel()} positions hold a label of no neighbour with that "
            f"similarity; first at [{row}, {col}]: label {labels_a[row, col].item()} at similarity "
            f"{a[row, col].item():.6g}"
        )
    return None


PROBLEM = Problem(id=79, make_inputs=make_inputs, solution=solution, compare=compare)
