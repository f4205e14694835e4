"""Wrong for problem 1: rank 1 forgets to communicate and returns its own tensor; rank 0 is right."""
import torch.distributed as dist


def solution(tensor):
    out = tensor.clone()
    if dist.get_rank() == 0:
        dist.all_reduce(out)
    else:
        work = dist.all_reduce(tensor.clone(), async_op=True)
        work.wait()
    return out
