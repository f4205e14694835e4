import torch.distributed as dist


def solution(tensor):
    out = tensor.float()
    dist.all_reduce(out)
    return out
