import torch.distributed as dist

PTX = "multimem.ld_reduce.relaxed.sys.global.add.f32 %0, [%1];"


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
