"""Demo candidate that crashes: calls a collective that does not exist (runtime_error)."""

import torch.distributed as dist


def solution(tensor):
    return dist.all_reduce_fast(tensor)
