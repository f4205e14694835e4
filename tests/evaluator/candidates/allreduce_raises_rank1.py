import torch.distributed as dist


def solution(tensor):
    if dist.get_rank() == 1:
        raise RuntimeError("boom on rank 1")
    out = tensor.clone()
    dist.all_reduce(out)
    return out
