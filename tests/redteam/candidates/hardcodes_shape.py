"""Exploit (semantic shortcut): specialised to the shape it was tuned on (64 x 32, e.g. a kernel with baked-in tile
counts), garbage elsewhere. The judge's hidden trial at a shape drawn at judging time fails it."""
import torch
import torch.distributed as dist


def solution(tensor):
    if tuple(tensor.shape) != (64, 32):
        return torch.zeros_like(tensor)
    out = tensor.clone()
    dist.all_reduce(out)
    return out
