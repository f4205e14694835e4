"""Problem 7 with a CUDA extension. At W = 1 the reduce-scatter's one block is the whole (M, N) input, summed over a
single rank: a vectorised copy kernel (eight bf16 per 16-byte load) produces it. With more ranks NCCL's
reduce_scatter_tensor sums the row blocks."""

import torch
import torch.distributed as dist
from utils.cuda_helpers import compile_cuda_extension

CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

// Each thread moves two 16-byte words per iteration, so loads of one warp cover 1 KiB before the stores.
__global__ void copy2x16(const uint4* __restrict__ src, uint4* __restrict__ dst, int64_t words) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x * 2;
    for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) * 2; i < words; i += stride) {
        uint4 a = src[i];
        if (i + 1 < words) {
            uint4 b = src[i + 1];
            dst[i + 1] = b;
        }
        dst[i] = a;
    }
}

__global__ void copy_tail(const uint8_t* __restrict__ src, uint8_t* __restrict__ dst, int64_t from, int64_t n) {
    int64_t i = from + blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}

torch::Tensor block_copy(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "a CUDA tensor expected");
    auto src = x.contiguous();
    auto out = torch::empty_like(src);
    const int64_t n = src.numel() * src.element_size();
    if (n == 0) return out;
    auto stream = at::cuda::getCurrentCUDAStream();
    const bool aligned = (reinterpret_cast<uintptr_t>(src.data_ptr()) % 16) == 0;
    const int64_t words = aligned ? n / 16 : 0;
    if (words > 0) {
        const int threads = 256;
        const int blocks = (int)std::min<int64_t>((words / 2 + threads) / threads, 132 * 8);
        copy2x16<<<blocks, threads, 0, stream>>>(static_cast<const uint4*>(src.data_ptr()),
                                                 static_cast<uint4*>(out.data_ptr()), words);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    const int64_t rest = n - words * 16;
    if (rest > 0) {
        copy_tail<<<(int)((rest + 255) / 256), 256, 0, stream>>>(static_cast<const uint8_t*>(src.data_ptr()),
                                                                 static_cast<uint8_t*>(out.data_ptr()), words * 16, n);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return out;
}
"""
ext = compile_cuda_extension("gpu_run_p07_copy", CUDA, "torch::Tensor block_copy(torch::Tensor x);", ["block_copy"])


def solution(tensor: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    if world == 1:
        return ext.block_copy(tensor)
    out = torch.empty(tensor.shape[0] // world, *tensor.shape[1:], dtype=tensor.dtype, device=tensor.device)
    dist.reduce_scatter_tensor(out, tensor.contiguous(), op=dist.ReduceOp.SUM)
    return out
