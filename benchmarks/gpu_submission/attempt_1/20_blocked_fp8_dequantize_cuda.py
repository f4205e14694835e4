"""Problem 20 with a CUDA extension: x[i] = fp32(y[i]) * fp32(s[i / block_size]) over the flattened (W, M, N)
payload, four elements per thread (one float4 store) when the block size allows it. At W = 1 the all-to-all keeps
the one chunk in place, so the dequantized tensor is the answer; with more ranks NCCL exchanges the chunks."""

import torch
import torch.distributed as dist
from utils.cuda_helpers import compile_cuda_extension

CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

template <typename T>
__global__ void dequant4(const T* __restrict__ y, const T* __restrict__ s, float4* __restrict__ out, int64_t quads,
                         int64_t block_size) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < quads; q += stride) {
        const int64_t i = q * 4;
        const float scale = static_cast<float>(s[i / block_size]);  // block_size % 4 == 0: one scale for all four
        float4 v;
        v.x = static_cast<float>(y[i]) * scale;
        v.y = static_cast<float>(y[i + 1]) * scale;
        v.z = static_cast<float>(y[i + 2]) * scale;
        v.w = static_cast<float>(y[i + 3]) * scale;
        out[q] = v;
    }
}

template <typename T>
__global__ void dequant1(const T* __restrict__ y, const T* __restrict__ s, float* __restrict__ out, int64_t n,
                         int64_t block_size) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = static_cast<float>(y[i]) * static_cast<float>(s[i / block_size]);
}

torch::Tensor dequantize(torch::Tensor y, torch::Tensor s, int64_t block_size) {
    TORCH_CHECK(y.is_cuda() && s.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(y.scalar_type() == s.scalar_type(), "payload and scales in one dtype expected");
    TORCH_CHECK(block_size > 0 && y.numel() == s.numel() * block_size, "one scale per block expected");
    auto yc = y.contiguous();
    auto sc = s.contiguous();
    auto out = torch::empty(yc.sizes(), yc.options().dtype(torch::kFloat32));
    const int64_t n = yc.numel();
    if (n == 0) return out;
    const int threads = 256;
    auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, yc.scalar_type(), "dequantize", [&] {
        if (block_size % 4 == 0) {
            const int64_t quads = n / 4;
            const int blocks = (int)std::min<int64_t>((quads + threads - 1) / threads, 132 * 16);
            dequant4<scalar_t><<<blocks, threads, 0, stream>>>(yc.data_ptr<scalar_t>(), sc.data_ptr<scalar_t>(),
                                                               reinterpret_cast<float4*>(out.data_ptr<float>()), quads,
                                                               block_size);
        } else {
            const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 132 * 16);
            dequant1<scalar_t><<<blocks, threads, 0, stream>>>(yc.data_ptr<scalar_t>(), sc.data_ptr<scalar_t>(),
                                                               out.data_ptr<float>(), n, block_size);
        }
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""
ext = compile_cuda_extension(
    "gpu_run_p20_dequant",
    CUDA,
    "torch::Tensor dequantize(torch::Tensor y, torch::Tensor s, int64_t block_size);",
    ["dequantize"],
)


def solution(local_y: torch.Tensor, local_s: torch.Tensor, block_size: int = 128) -> torch.Tensor:
    x = ext.dequantize(local_y, local_s, block_size)
    if dist.get_world_size() == 1:
        return x
    out = torch.empty_like(x)
    dist.all_to_all_single(out, x)
    return out
