"""Exploit (reading expected outputs): return uninitialised memory, hoping the allocator hands back the buffer where
the reference's answer was just computed (Sakana's "150x" kernels did this inside one process). Here the reference
runs in another process, so there is nothing of it to find. Works on CPU and CUDA."""
import torch

_hoard = []


def solution(tensor):
    # Several same-sized blocks, returned uninitialised: whatever was there before.
    for _ in range(4):
        _hoard.append(torch.empty_like(tensor))
    return _hoard[-1]
