"""Compat style: a world-size-1 shortcut. With one rank the all-reduce is the input itself (returned as is, as
kernels do); otherwise a plain NCCL/gloo all-reduce of a copy. Problem 1; expected: correct at W = 1 and W = 2."""
import torch.distributed as dist


def solution(tensor):
    if dist.get_world_size() == 1:
        return tensor
    out = tensor.clone()
    dist.all_reduce(out)
    return out
