"""Problem 5 with a CUDA extension. At W = 1 rank 0 holds a (1, M, N) tensor and keeps slice 0: one kernel copies
the slice out with 16-byte loads (grid-stride, a byte tail). With more ranks rank 0 hands NCCL's scatter its
slices and every other rank receives into a copy of its buffer, as the reference does."""

import torch
import torch.distributed as dist
from utils.cuda_helpers import compile_cuda_extension

CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void slice_copy(const uint8_t* __restrict__ src, uint8_t* __restrict__ dst, int64_t n, int64_t n16) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    for (int64_t w = i; w < n16; w += stride)
        reinterpret_cast<int4*>(dst)[w] = __ldg(reinterpret_cast<const int4*>(src) + w);
    for (int64_t b = n16 * 16 + i; b < n; b += stride) dst[b] = src[b];
}

// Slice `index` of a stacked (S, ...) tensor as a new contiguous tensor.
torch::Tensor take_slice(torch::Tensor stacked, int64_t index) {
    TORCH_CHECK(stacked.is_cuda() && stacked.is_contiguous() && stacked.dim() >= 1,
                "a contiguous CUDA tensor expected");
    TORCH_CHECK(index >= 0 && index < stacked.size(0), "slice index out of range");
    auto out = torch::empty(stacked.sizes().slice(1), stacked.options());
    const int64_t n = out.numel() * out.element_size();
    if (n == 0) return out;
    const uint8_t* src = static_cast<const uint8_t*>(stacked.data_ptr()) + index * n;
    const bool aligned = (reinterpret_cast<uintptr_t>(src) % 16) == 0;
    const int64_t n16 = aligned ? n / 16 : 0;
    const int threads = 512;
    const int blocks =
        (int)std::max<int64_t>(1, std::min<int64_t>((std::max<int64_t>(n16, 1) + threads - 1) / threads, 132 * 4));
    slice_copy<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(src, static_cast<uint8_t*>(out.data_ptr()),
                                                                          n, n16);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""
ext = compile_cuda_extension(
    "gpu_run_p05_slice", CUDA, "torch::Tensor take_slice(torch::Tensor stacked, int64_t index);", ["take_slice"]
)


def solution(tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
    if dist.get_world_size() == 1:
        return ext.take_slice(tensor.contiguous(), 0)
    if dist.get_rank() == src:
        stacked = tensor.contiguous()
        pieces = [ext.take_slice(stacked, i) for i in range(stacked.shape[0])]
        out = torch.empty_like(pieces[0])
        dist.scatter(out, pieces, src=src)
    else:
        out = tensor.clone()
        dist.scatter(out, None, src=src)
    return out
