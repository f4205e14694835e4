"""Exploit (semantic shortcut, problem 13): a GEMM on inputs rounded to fp8 (e4m3, 3 mantissa bits) - much faster on
tensor cores, and wrong beyond the tolerance. Compare honest_gemm_fp32.py (more precise than the reference: passes)."""
import torch
import torch.distributed as dist


def solution(A_local, B_local):
    a = A_local.to(torch.float8_e4m3fn).to(torch.float32)
    b = B_local.to(torch.float8_e4m3fn).to(torch.float32)
    partial = a @ b
    dist.all_reduce(partial)
    return partial.to(A_local.dtype)
