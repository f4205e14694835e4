"""Problem 2 with a CUDA extension. At W = 1 the stacked all-gather is this rank's tensor under a new leading
dimension, so one copy kernel fills the (1, M, N) output: 16 bytes per thread while whole int4 words remain (when
both pointers allow it), then a byte tail. With more ranks NCCL's all_gather_into_tensor moves the data."""

import torch
import torch.distributed as dist
from utils.cuda_helpers import compile_cuda_extension

CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void copy_bytes(const uint8_t* __restrict__ src, uint8_t* __restrict__ dst, int64_t n, int64_t n16) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int4* s = reinterpret_cast<const int4*>(src);
    int4* d = reinterpret_cast<int4*>(dst);
    for (int64_t i = tid; i < n16; i += stride) d[i] = s[i];
    for (int64_t i = n16 * 16 + tid; i < n; i += stride) dst[i] = src[i];
}

void copy_into(torch::Tensor src, torch::Tensor dst) {
    TORCH_CHECK(src.is_cuda() && dst.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(src.is_contiguous() && dst.is_contiguous(), "contiguous tensors expected");
    const int64_t n = src.numel() * src.element_size();
    TORCH_CHECK(n == dst.numel() * dst.element_size(), "source and destination sizes differ");
    if (n == 0) return;
    // int4 accesses need 16-byte aligned addresses; a view at an odd offset takes the byte path.
    const bool aligned =
        ((reinterpret_cast<uintptr_t>(src.data_ptr()) | reinterpret_cast<uintptr_t>(dst.data_ptr())) % 16) == 0;
    const int64_t n16 = aligned ? n / 16 : 0;
    const int threads = 256;
    const int64_t work = std::max<int64_t>(n16, aligned ? (n % 16) : n);
    const int blocks = (int)std::max<int64_t>(1, std::min<int64_t>((work + threads - 1) / threads, 132 * 8));
    copy_bytes<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        static_cast<const uint8_t*>(src.data_ptr()), static_cast<uint8_t*>(dst.data_ptr()), n, n16);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}
"""
ext = compile_cuda_extension(
    "gpu_run_p02_copy", CUDA, "void copy_into(torch::Tensor src, torch::Tensor dst);", ["copy_into"]
)


def solution(tensor: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    src = tensor.contiguous()
    out = torch.empty((world, *src.shape), dtype=src.dtype, device=src.device)
    if world == 1:
        ext.copy_into(src, out)
    else:
        dist.all_gather_into_tensor(out.view(world * src.shape[0], *src.shape[1:]), src)
    return out
