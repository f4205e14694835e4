"""Problem 13 at float32: a bfloat16 result 5% off. Another dtype is judged under the problem's tolerance, and this
is outside it: incorrect, and the message says the dtype differed."""
import torch
import torch.distributed as dist


def solution(A_local, B_local):
    partial = A_local @ B_local
    dist.all_reduce(partial)
    return (partial * 1.05).to(torch.bfloat16)
