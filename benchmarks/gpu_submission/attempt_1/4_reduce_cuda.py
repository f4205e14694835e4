"""Problem 4 with a CUDA extension: the out-of-place copy that the reduce writes into is made by a typed kernel,
eight 16-bit elements (or four 32-bit ones) per 16-byte load, a scalar tail; at W = 1 the reduce is that copy, and
with more ranks NCCL sums the copies onto rank dst (a non-root keeps its own copy, as NCCL leaves it)."""

import torch
import torch.distributed as dist
from utils.cuda_helpers import compile_cuda_extension

CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

template <typename T>
__global__ void copy_vec(const T* __restrict__ src, T* __restrict__ dst, int64_t n, bool aligned) {
    constexpr int PER = 16 / sizeof(T);
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int64_t words = aligned ? n / PER : 0;
    for (int64_t i = tid; i < words; i += stride)
        reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
    for (int64_t i = words * PER + tid; i < n; i += stride) dst[i] = src[i];
}

torch::Tensor copy(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "a CUDA tensor expected");
    auto src = x.contiguous();
    auto out = torch::empty_like(src);
    const int64_t n = src.numel();
    if (n == 0) return out;
    const bool aligned = (reinterpret_cast<uintptr_t>(src.data_ptr()) % 16) == 0;  // out comes from the allocator
    const int threads = 256;
    const int blocks = (int)std::max<int64_t>(1, std::min<int64_t>((n / 8 + threads - 1) / threads, 132 * 8));
    auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, src.scalar_type(), "copy_vec", [&] {
        copy_vec<scalar_t><<<blocks, threads, 0, stream>>>(src.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n,
                                                           aligned);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""
ext = compile_cuda_extension("gpu_run_p04_copy", CUDA, "torch::Tensor copy(torch::Tensor x);", ["copy"])


def solution(tensor: torch.Tensor, dst: int = 0) -> torch.Tensor:
    out = ext.copy(tensor)
    if dist.get_world_size() == 1:
        return out
    if dist.get_backend() == "gloo" and dist.get_rank() != dst:
        dist.reduce(out.clone(), dst=dst, op=dist.ReduceOp.SUM)  # gloo uses a non-root's buffer as scratch
    else:
        dist.reduce(out, dst=dst, op=dist.ReduceOp.SUM)
    return out
