"""Honest control: allocates its output once per shape and returns the same buffer on every call (common in PKB
kernels). The judge must copy a kept timed output at once, or it would see a later call's values."""
import torch
import torch.distributed as dist

_buffers = {}


def solution(tensor):
    key = (tuple(tensor.shape), tensor.dtype)
    out = _buffers.get(key)
    if out is None:
        out = _buffers[key] = torch.empty_like(tensor)
    out.copy_(tensor)
    dist.all_reduce(out)
    return out
