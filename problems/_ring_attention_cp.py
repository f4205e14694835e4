"""Context-parallel ring attention (forward) in fp32 math, shared by problems 54, 55, 56 (and the ring of 57).

Ranks of the CP group hold contiguous blocks of the sequence: CP rank c holds positions [c*S, (c+1)*S). At ring
step s every rank holds the k/v block of CP rank (c - s) mod cp and passes it on to c + 1 (one batched isend/irecv
per step, as ring-flash-attention does; every block is relayed, needed or not). Each used block yields an fp32
partial output and log-sum-exp, merged in the running sigmoid / logsigmoid form of ring-flash-attention.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F


def block_attention(q, k, v, scale: float, diagonal_mask: bool):
    """fp32 softmax attention of q over one k/v block: out (B, Sq, H, D) and lse (B, H, Sq)."""
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * scale
    if diagonal_mask:  # the block on the diagonal: key index <= query index
        future = torch.ones(q.shape[1], k.shape[1], dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    probs = torch.exp(scores - lse.unsqueeze(-1))
    return torch.einsum("bhqk,bkhd->bqhd", probs, v), lse


def merge(out, lse, block_out, block_lse):
    """out, lse after adding one block: exp-weighted average of the outputs, log-sum-exp of the lses."""
    if out is None:
        return block_out, block_lse
    weight = torch.sigmoid(block_lse - lse).transpose(1, 2).unsqueeze(-1)  # (B, S, H, 1)
    return out - weight * (out - block_out), lse - F.logsigmoid(lse - block_lse)


def ring_neighbours(group) -> tuple[int, int]:
    """Global ranks of CP-group ranks c + 1 and c - 1."""
    c, size = dist.get_rank(group), dist.get_world_size(group)
    return dist.get_global_rank(group, (c + 1) % size), dist.get_global_rank(group, (c - 1) % size)


def ring_pass(tensors, group):
    """Send each tensor to the next CP rank and receive the previous rank's: one batched isend/irecv."""
    nxt, prv = ring_neighbours(group)
    tensors = [t.contiguous() for t in tensors]
    received = [torch.empty_like(t) for t in tensors]
    ops = []
    for sent, buffer in zip(tensors, received, strict=False):
        ops.append(dist.P2POp(dist.isend, sent, nxt, group=group))
        ops.append(dist.P2POp(dist.irecv, buffer, prv, group=group))
    for request in dist.batch_isend_irecv(ops):
        request.wait()
    return received


def ring_attention(q, k, v, softmax_scale: float | None = None, causal: bool = False, group=None):
    """Attention of the local queries over the whole CP sequence; fp32 math, output in q's dtype."""
    group = group if group is not None else dist.group.WORLD
    size, c = dist.get_world_size(group), dist.get_rank(group)
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    qf = q.float()
    out = lse = None
    for step in range(size):
        following = ring_pass([k, v], group) if step + 1 < size else None
        if not causal or step <= c:  # causal: blocks of later CP ranks are only relayed
            block_out, block_lse = block_attention(qf, k.float(), v.float(), scale, causal and step == 0)
            out, lse = merge(out, lse, block_out, block_lse)
        if following is not None:
            k, v = following
    return out.to(q.dtype)


def projection_slack(expected: torch.Tensor, world_size: int) -> float:
    """Extra absolute tolerance, 4% of the output's RMS, for attention blocks with bf16 projections (55, 56).

    The reference rounds q/k/v, the context and the block output to bf16 (and, in 56, feeds stage 0's bf16 output to
    stage 1); a float64 computation of the same block differs by up to ~2% of the output's RMS (measured at the
    default shapes), which atol = 1e-2 alone does not cover once the outputs have unit scale. Zeros, a missing TP
    partial or missing ring blocks miss by O(RMS).
    """
    return 0.04 * expected.detach().float().pow(2).mean().sqrt().item() if expected.numel() else 0.0
