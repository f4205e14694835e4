import torch.distributed as dist
from utils.cuda_helpers import compile_cuda_extension  # noqa: F401  (must import inside candidate ranks)
from utils.triton_utils import cdiv, next_power_of_2

assert cdiv(10, 4) == 3 and next_power_of_2(33) == 64


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
