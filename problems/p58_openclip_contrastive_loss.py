"""58 openclip_contrastive_loss: SigLIP sigmoid contrastive loss (forward) with OpenCLIP's bidirectional neighbour
exchange of the text features.

Interface as PKB: ``solution(image_features (B_local, Df) D, text_features (B_local, Df) D, logit_scale: float,
logit_bias: float = 0.0, group = None) -> 0-dim tensor`` in D, rank-specific. B_local = max(1, M // W),
Df = max(16, N); logit_scale = 10, logit_bias = -10; group None means WORLD.
loss_r = L(I_r, T_r) + sum over j != r of L_neg(I_r, T_j), with L(I, T) = -sum log sigmoid(label * Z) / rows(I),
Z = (logit_scale * I) T^T + logit_bias in D, labels +1 on the diagonal (positive term only) and -1 elsewhere. The
text features travel in (W-1)//2 bidirectional rounds (one batched isend/irecv to r+1 and r-1 each), plus one
one-way step to r+1 if W-1 is odd; terms are added in the order +1, -1, +2, -2, ..., then the antipodal rank.

Decisions:
- The exchange is invisible in PKB (spec Pitfalls): independent random unit vectors give negative logits ~ -10, so
  each remote term is ~ 0.006 and rounds away in bf16 next to the local ~ 10; the constant 10.0 passes. We draw
  features that share a common direction, as CLIP embeddings do (they fill a narrow cone): every rank's
  image and text rows are normalise(c + 0.65 * noise) with c common to all ranks, noise rank-specific, so any two
  rows have cosine ~ 0.7, logits ~ -3 and each remote term ~ 0.05 * B_local (about 6 of a total of ~ 50 at the
  defaults, W = 8). Normalisation is done in D as in the spec. Semantics are unchanged.
- Order of additions: each term is computed in D as the spec writes it; the reference adds the terms in fp32 and
  rounds once. All terms are positive, so any order of bf16 additions differs by at most (W-1) 2^-8 |loss|; with
  the terms' own bf16 rounding the check allows slack = (W + 1) 2^-8 |loss| on top of atol = rtol = 1e-2. A loss
  missing one remote term (~ 12% at the defaults) or all of them (no communication) fails.
- Null answers: zeros fail; the input has another shape.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.base import InputContext, Problem

LOGIT_SCALE, LOGIT_BIAS = 10.0, -10.0
NOISE = 0.65


def make_inputs(ctx: InputContext):
    B, Df = max(1, ctx.M // ctx.world_size), max(16, ctx.N)
    ctx.seed("shared")
    common = torch.randn(Df, dtype=ctx.dtype, device=ctx.device)
    ctx.seed(ctx.rank)
    features = []
    for _ in range(2):  # image, then text
        x = common + NOISE * torch.randn(B, Df, dtype=ctx.dtype, device=ctx.device)
        features.append(x / x.norm(dim=-1, keepdim=True))
    return features[0], features[1], LOGIT_SCALE, LOGIT_BIAS, None


def pair_loss(image, text, logit_scale, logit_bias, negative_only):
    logits = (logit_scale * image) @ text.t() + logit_bias
    labels = -torch.ones_like(logits)
    if not negative_only:
        labels += 2 * torch.eye(logits.shape[0], logits.shape[1], dtype=logits.dtype, device=logits.device)
    return -F.logsigmoid(labels * logits).sum() / image.shape[0]


def _exchange(sends, group):
    """sends: list of (tensor, destination group rank, source group rank); one batched isend/irecv."""
    received, ops = [], []
    for tensor, dst, _ in sends:
        ops.append(dist.P2POp(dist.isend, tensor, dist.get_global_rank(group, dst), group=group))
    for tensor, _, src in sends:
        buffer = torch.empty_like(tensor)
        ops.append(dist.P2POp(dist.irecv, buffer, dist.get_global_rank(group, src), group=group))
        received.append(buffer)
    for request in dist.batch_isend_irecv(ops):
        request.wait()
    return received


@torch.no_grad()
def solution(image_features, text_features, logit_scale, logit_bias=0.0, group=None):
    group = group if group is not None else dist.group.WORLD
    W, r = dist.get_world_size(group), dist.get_rank(group)
    right, left = (r + 1) % W, (r - 1) % W
    terms = [pair_loss(image_features, text_features, logit_scale, logit_bias, False)]
    to_right = to_left = text_features.contiguous()
    for _ in range((W - 1) // 2):
        # send to_right to r+1 (arrives there as its from_left) and to_left to r-1
        from_left, from_right = _exchange([(to_right, right, left), (to_left, left, right)], group)
        terms.append(pair_loss(image_features, from_right, logit_scale, logit_bias, True))
        terms.append(pair_loss(image_features, from_left, logit_scale, logit_bias, True))
        to_left, to_right = from_right, from_left
    if (W - 1) % 2:
        (from_left,) = _exchange([(to_right, right, left)], group)
        terms.append(pair_loss(image_features, from_left, logit_scale, logit_bias, True))
    return sum(t.float() for t in terms).to(image_features.dtype)


def slack(expected: torch.Tensor, W: int) -> float:
    return (W + 1) * 2.0**-8 * expected.detach().abs().max().item() if expected.numel() else 0.0


PROBLEM = Problem(id=58, make_inputs=make_inputs, solution=solution, slack=slack)
