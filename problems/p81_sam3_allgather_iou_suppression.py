"""81 sam3_allgather_iou_suppression: SAM 3 multi-GPU tracker step: all-gather the objects' low-res masks and scores
(uneven counts per rank), then suppress overlapping objects that were occluded more recently.

Interface as PKB: ``solution(low_res_masks_local (n_r, 256, 256) D, obj_scores_local (n_r,) D, num_obj_per_gpu,
last_occluded (T,) int64, iou_threshold=0.7, reverse=False, group=None) -> (masks (T, 256, 256) fp32, scores (T,)
fp32, to_suppress (T,) bool)``, identical on every rank. counts[i] = 1 + ((i + trial) mod 3); scores are
linspace(-5, 5, n_r); last_occluded[j] = (j mod 5) - 1.

Decisions (spec Pitfalls):
- Suppression never fires on PKB's masks (randn + 4P - 1: same-phase pairs have IoU ~0.51 < 0.7), so the logic
  would go untested. We draw randn + 4P - 2 instead: the striped support is kept but the background noise drops,
  so two objects with the same stripe phase ((c + r) mod 5) have IoU ~0.81 and other pairs ~0.03. Phases collide
  across ranks for most W and trials, and last_occluded then decides who is suppressed (both rules fire).
- reverse=True flips the occlusion comparison (">" becomes "<"); the validity test "> -1" is not flipped.
- Uneven all_gather: NCCL carries it out (as PKB); gloo rejects uneven sizes, so on gloo only we pad every rank's
  block to the largest count, gather, and trim.
- W = 1 (or a single object) gathers nothing and suppresses nothing.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem

SIDE = 256


def make_inputs(ctx: InputContext):
    W, r = ctx.world_size, ctx.rank
    counts = [1 + ((i + ctx.trial) % 3) for i in range(W)]
    n = counts[r]
    c = torch.arange(n, device=ctx.device).view(n, 1, 1)
    y = torch.arange(SIDE, device=ctx.device).view(1, SIDE, 1)
    x = torch.arange(SIDE, device=ctx.device).view(1, 1, SIDE)
    stripes = ((y + x + c + r) % 5 == 0).to(ctx.dtype)
    ctx.seed(r)
    masks = torch.randn(n, SIDE, SIDE, dtype=ctx.dtype, device=ctx.device) + 4 * stripes - 2
    scores = torch.linspace(-5, 5, n, dtype=ctx.dtype, device=ctx.device)
    last_occluded = torch.arange(sum(counts), dtype=torch.int64, device=ctx.device) % 5 - 1
    return masks, scores, counts, last_occluded, 0.7, False, None


def _all_gather_uneven(local: torch.Tensor, counts: list[int], group) -> torch.Tensor:
    if dist.get_backend(group) == "gloo":  # gloo needs equal sizes: pad to the largest block, then trim
        most = max(counts)
        padded = torch.zeros((most,) + local.shape[1:], dtype=local.dtype, device=local.device)
        padded[: local.shape[0]] = local
        parts = [torch.empty_like(padded) for _ in counts]
        dist.all_gather(parts, padded, group=group)
        parts = [part[:n] for part, n in zip(parts, counts, strict=False)]
    else:
        parts = [torch.empty((n,) + local.shape[1:], dtype=local.dtype, device=local.device) for n in counts]
        dist.all_gather(parts, local, group=group)
    return torch.cat(parts)


@torch.no_grad()
def solution(
    low_res_masks_local, obj_scores_local, num_obj_per_gpu, last_occluded, iou_threshold=0.7, reverse=False, group=None
):
    W, rank = dist.get_world_size(group), dist.get_rank(group)
    counts = list(num_obj_per_gpu)
    if low_res_masks_local.shape[0] != counts[rank] or obj_scores_local.shape[0] != counts[rank]:
        raise ValueError(
            f"rank {rank} holds {low_res_masks_local.shape[0]} masks and {obj_scores_local.shape[0]} "
            f"scores, num_obj_per_gpu says {counts[rank]}"
        )
    masks = low_res_masks_local.to(torch.float32, copy=True)  # never write into the input
    scores = obj_scores_local.to(torch.float32, copy=True)
    if W > 1:
        masks = _all_gather_uneven(masks, counts, group)
        scores = _all_gather_uneven(scores, counts, group)
    T = masks.shape[0]
    to_suppress = torch.zeros(T, dtype=torch.bool, device=masks.device)
    if T > 1:
        binary = (masks > 0).reshape(T, -1).float()
        inter = binary @ binary.t()  # exact integer counts
        area = binary.sum(dim=1)
        iou = inter / (area.view(-1, 1) + area.view(1, -1) - inter).clamp_min(1)
        pairs = torch.ones(T, T, dtype=torch.bool, device=masks.device).triu(diagonal=1)  # i < j
        overlap = (iou >= iou_threshold) & pairs
        occ = last_occluded.view(-1, 1), last_occluded.view(1, -1)  # [i, j] -> l_i, l_j
        later = occ[0] < occ[1] if reverse else occ[0] > occ[1]  # later[i, j]: l_i compares past l_j
        suppress_i = (overlap & later & (occ[1] > -1)).any(dim=1)
        suppress_j = (overlap & later.t() & (occ[0] > -1)).any(dim=0)
        to_suppress = suppress_i | suppress_j
    masks[to_suppress] = -10.0
    return masks, scores, to_suppress


PROBLEM = Problem(id=81, make_inputs=make_inputs, solution=solution)
