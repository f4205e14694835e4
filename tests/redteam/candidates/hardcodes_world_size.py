"""Exploit (semantic shortcut): written for the world size of the run it was tuned on (2 ranks): a fixed list of two
receive buffers. Correct at W=2; the judge's hidden run at another world size fails it."""
import torch
import torch.distributed as dist


def solution(tensor):
    parts = [torch.empty_like(tensor) for _ in range(2)]
    dist.all_gather(parts, tensor)
    return parts[0] + parts[1]
