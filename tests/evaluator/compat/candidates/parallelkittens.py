"""Compat style: a ParallelKittens-backend kernel. Its runtime is not shipped here, so the judge refuses the file
before launching anything. Expected: compile_error naming the backend and the supported ones."""
import torch
from utils.parallelkittens_runtime import load_pk_kernel  # noqa: F401

_kernel = None


def solution(tensor):
    global _kernel
    if _kernel is None:
        _kernel = load_pk_kernel("all_reduce_sum", dtype=torch.bfloat16)
    return _kernel(tensor)
