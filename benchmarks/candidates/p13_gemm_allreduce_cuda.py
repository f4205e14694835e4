"""Problem 13 with a CUDA extension: the per-rank GEMM goes straight to bf16 through cuBLAS (ATen's mm, called from
the compiled extension) with no fp32 round trip; NCCL's bf16 sum across ranks; nothing to sum at W=1."""

import torch
import torch.distributed as dist
from utils.cuda_helpers import compile_cuda_extension

CPP = r"""
#include <torch/extension.h>
torch::Tensor gemm_bf16(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda(), "CUDA tensors expected");
    return at::mm(a, b);
}
"""
ext = compile_cuda_extension("pkb_p13_gemm", cuda_source="", cpp_source=CPP, functions=["gemm_bf16"])


def solution(A_local: torch.Tensor, B_local: torch.Tensor) -> torch.Tensor:
    C = ext.gemm_bf16(A_local, B_local)
    if dist.get_world_size() > 1:
        dist.all_reduce(C)
    return C
