"""PLANTED WRONG: the all-gather sends the rank's unreduced chunk, so each chunk holds one rank's partial only.

Problem 13 (local GEMM, then sum all-reduce), torch.distributed collectives: the all-reduce as two halves.

The fp32 partial (each rank's GEMM rounded to bf16 first, as the spec's recipe) is reduce-scattered into W equal
chunks (reduce_scatter_tensor), then the reduced chunks are all-gathered back (all_gather_into_tensor): the ring
all-reduce's two phases as two collectives. Padded to a multiple of W elements where the size does not divide.
"""

import torch
import torch.distributed as dist


def solution(A_local: torch.Tensor, B_local: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    partial = (A_local @ B_local).float()
    flat = partial.reshape(-1)
    chunk = -(-flat.numel() // world)
    padded = torch.zeros(chunk * world, dtype=flat.dtype, device=flat.device)
    padded[: flat.numel()] = flat
    mine = torch.empty(chunk, dtype=flat.dtype, device=flat.device)
    dist.reduce_scatter_tensor(mine, padded)
    whole = torch.empty_like(padded)
    dist.all_gather_into_tensor(whole, padded[dist.get_rank() * chunk : (dist.get_rank() + 1) * chunk].contiguous())
    return whole[: flat.numel()].view(partial.shape).to(A_local.dtype)
