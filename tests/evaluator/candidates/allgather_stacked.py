import torch
import torch.distributed as dist


def solution(tensor):
    # The form problem 2's page lists for NCCL: all_gather_into_tensor straight into the stacked (W, M, N) output.
    out = torch.empty((dist.get_world_size(), *tensor.shape), dtype=tensor.dtype, device=tensor.device)
    dist.all_gather_into_tensor(out, tensor)
    return out
