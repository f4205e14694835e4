"""Problem 1 with a CUDA extension: a 16-byte-vectorised copy kernel; the sum is NCCL's (nothing to add at W=1)."""

import torch
import torch.distributed as dist
from utils.cuda_helpers import compile_cuda_extension

CUDA = r"""
#include <torch/extension.h>
__global__ void copy16(const int4* __restrict__ src, int4* __restrict__ dst, long n16) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n16; i += (long)gridDim.x * blockDim.x)
        dst[i] = src[i];
}
torch::Tensor copy(torch::Tensor x) {
    auto out = torch::empty_like(x);
    long bytes = x.numel() * x.element_size();
    TORCH_CHECK(bytes % 16 == 0, "size must be a multiple of 16 bytes");
    long n16 = bytes / 16;
    int threads = 256;
    int blocks = (int)std::min<long>((n16 + threads - 1) / threads, 132L * 16);
    copy16<<<blocks, threads>>>((const int4*)x.data_ptr(), (int4*)out.data_ptr(), n16);
    return out;
}
"""
ext = compile_cuda_extension("pkb_p01_copy", CUDA, "torch::Tensor copy(torch::Tensor x);", ["copy"])


def solution(tensor: torch.Tensor) -> torch.Tensor:
    out = ext.copy(tensor.contiguous())
    if dist.get_world_size() > 1:
        dist.all_reduce(out)
    return out
