import torch.distributed as dist


def solution(tensor):
    out = tensor.clone()
    if dist.get_rank() != 1:  # rank 1 never joins: everyone else waits forever
        dist.all_reduce(out)
    return out
