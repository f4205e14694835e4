"""Honest control: the plain out-of-place all-reduce."""
import torch.distributed as dist


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
