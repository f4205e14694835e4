"""Problem 13 (GEMM + all-reduce) run at float32: computes in fp32 and returns bfloat16, which halves the bytes a
result moves. Within tolerance, so correct, flagged dtype_differs and never faster (docs/dtype.md)."""
import torch
import torch.distributed as dist


def solution(A_local, B_local):
    partial = A_local @ B_local
    dist.all_reduce(partial)
    return partial.to(torch.bfloat16)
