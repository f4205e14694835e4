"""Problem 8 with a CUDA extension: at W=1 one vectorised copy kernel; otherwise NCCL's all-to-all."""

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
    long n16 = x.numel() * x.element_size() / 16;
    int threads = 256;
    int blocks = (int)std::min<long>((n16 + threads - 1) / threads, 132L * 16);
    copy16<<<blocks, threads>>>((const int4*)x.data_ptr(), (int4*)out.data_ptr(), n16);
    return out;
}
"""
ext = compile_cuda_extension("pkb_p08_copy", CUDA, "torch::Tensor copy(torch::Tensor x);", ["copy"])


def solution(tensor: torch.Tensor) -> torch.Tensor:
    if dist.get_world_size() == 1:
        return ext.copy(tensor.contiguous())
    out = torch.empty_like(tensor)
    dist.all_to_all_single(out, tensor.contiguous())
    return out
