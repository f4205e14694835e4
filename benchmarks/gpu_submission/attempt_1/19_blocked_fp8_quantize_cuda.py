"""Problem 19 with a CUDA extension: one warp per block of `block_size` contiguous elements. The warp's lanes take
the block's absolute maximum with shuffles, the scale is amax / 448 (0 for an all-zero block, divided by 1 then),
and each element becomes E4M3 through the IEEE fp32 division (nvcc's default, no fast math) and cuda_fp8.h's
round-to-nearest-even conversion, saturating at 448. With more ranks the payload (as bytes) and the scales are
all-gathered, as the reference does; at W = 1 the local result is the answer."""

import torch
import torch.distributed as dist
from utils.cuda_helpers import compile_cuda_extension

CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_fp8.h>

constexpr float FP8_MAX = 448.0f;

template <typename T>
__global__ void quantize_blocks(const T* __restrict__ x, __nv_fp8_storage_t* __restrict__ y, float* __restrict__ scales,
                                int64_t blocks, int block_size) {
    const int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (warp >= blocks) return;  // whole warps leave together: the shuffles below see all 32 lanes
    const T* src = x + warp * block_size;
    float amax = 0.f;
    for (int i = lane; i < block_size; i += 32) amax = fmaxf(amax, fabsf(static_cast<float>(src[i])));
    for (int off = 16; off > 0; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffff, amax, off));
    const float scale = amax / FP8_MAX;
    const float safe = scale == 0.f ? 1.f : scale;
    __nv_fp8_storage_t* dst = y + warp * block_size;
    for (int i = lane; i < block_size; i += 32)
        dst[i] = __nv_cvt_float_to_fp8(static_cast<float>(src[i]) / safe, __NV_SATFINITE, __NV_E4M3);
    if (lane == 0) scales[warp] = scale;
}

std::vector<torch::Tensor> quantize(torch::Tensor x, int64_t block_size) {
    TORCH_CHECK(x.is_cuda() && x.dim() >= 1, "a CUDA tensor expected");
    TORCH_CHECK(block_size > 0 && x.size(-1) % block_size == 0, "the last dimension must hold whole blocks");
    auto src = x.contiguous();
    auto y = torch::empty(src.sizes(), src.options().dtype(at::kFloat8_e4m3fn));
    std::vector<int64_t> scale_shape(src.sizes().begin(), src.sizes().end());
    scale_shape.back() = src.size(-1) / block_size;
    auto s = torch::empty(scale_shape, src.options().dtype(torch::kFloat32));
    const int64_t blocks = src.numel() / block_size;
    if (blocks == 0) return {y, s};
    const int threads = 256;  // 8 warps, 8 blocks of the input per CUDA block
    const int64_t grid = (blocks * 32 + threads - 1) / threads;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, src.scalar_type(), "quantize_blocks", [&] {
        quantize_blocks<scalar_t><<<(unsigned)grid, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
            src.data_ptr<scalar_t>(), static_cast<__nv_fp8_storage_t*>(y.data_ptr()), s.data_ptr<float>(), blocks,
            (int)block_size);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return {y, s};
}
"""
ext = compile_cuda_extension(
    "gpu_run_p19_fp8", CUDA, "std::vector<torch::Tensor> quantize(torch::Tensor x, int64_t block_size);", ["quantize"]
)


def solution(local_tensor: torch.Tensor, block_size: int = 128):
    y, s = ext.quantize(local_tensor, block_size)
    world = dist.get_world_size()
    if world == 1:
        return y, s
    y_bytes = y.view(torch.uint8)
    y_parts = [torch.empty_like(y_bytes) for _ in range(world)]
    dist.all_gather(y_parts, y_bytes)
    s_parts = [torch.empty_like(s) for _ in range(world)]
    dist.all_gather(s_parts, s)
    return torch.cat(y_parts).view(torch.float8_e4m3fn), torch.cat(s_parts)
