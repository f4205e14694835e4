import os

import torch.distributed as dist


def solution(tensor):
    if dist.get_rank() == 1:
        os._exit(0)
    out = tensor.clone()
    dist.all_reduce(out)
    return out
