"""Helpers shared by problems 2-17 (collective primitives and the TP GEMM family); skipped by the registry."""

import torch
import torch.distributed as dist

from problems.base import InputContext


def exact_integers(ctx: InputContext, shape) -> torch.Tensor:
    """Rank-specific random integers in [-k, k], k = max(1, 256 // W), as ``ctx.dtype`` on ``ctx.device``.

    Any partial sum of W such tensors has magnitude <= 256, which bf16 (and fp16, fp32) represents exactly, so a
    SUM collective over them is exact and independent of the reduction order, while constants, zeros or a
    no-communication answer still fail.
    """
    ctx.seed(ctx.rank)
    bound = max(1, 256 // ctx.world_size)
    return torch.randint(-bound, bound + 1, tuple(shape), device=ctx.device).to(ctx.dtype)


def all_gather_stacked(tensor: torch.Tensor, group=None) -> torch.Tensor:
    """All-gather ``tensor`` from every rank into a new (W, *tensor.shape) tensor, slot s = rank s's tensor.

    One all_gather_into_tensor, as PKB. The collective writes a flat (W * rows, ...) view of the stacked buffer:
    NCCL accepts either shape, gloo only the flat one, and the bytes are the same.
    """
    world_size = dist.get_world_size(group)
    tensor = tensor.contiguous()
    out = torch.empty((world_size, *tensor.shape), dtype=tensor.dtype, device=tensor.device)
    flat = out.view(world_size * tensor.shape[0], *tensor.shape[1:]) if tensor.dim() else out
    dist.all_gather_into_tensor(flat, tensor, group=group)
    return out
