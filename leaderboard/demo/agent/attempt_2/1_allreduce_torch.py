"""Demo candidate, attempt 2 of an agent: all-gather then a local sum (correct, more traffic than all_reduce)."""

import torch
import torch.distributed as dist


def solution(tensor: torch.Tensor) -> torch.Tensor:
    parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, tensor.contiguous())
    return torch.stack(parts).float().sum(dim=0).to(tensor.dtype)
