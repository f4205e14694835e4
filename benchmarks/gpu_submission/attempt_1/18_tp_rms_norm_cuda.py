"""Problem 18 with a CUDA extension: one block per row sums the squares in fp32 (a warp-shuffle reduction), the sums
are all-reduced across the ranks that share the hidden dimension, and a second kernel scales each row and applies
the weight (rounded to the input dtype first, as LlamaRMSNorm does).

This is the run's known-wrong file (benchmarks/gpu_submission/README.md): the normalising kernel takes the
reciprocal square root of the SUM of squares, not of their mean over the global hidden size (a wrong scale of
sqrt(N * W)), so the judge must answer incorrect."""

import torch
import torch.distributed as dist
from utils.cuda_helpers import compile_cuda_extension

CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

template <typename T>
__global__ void row_sumsq(const T* __restrict__ x, float* __restrict__ sumsq, int64_t cols) {
    __shared__ float warp_sums[32];
    const T* row = x + blockIdx.x * cols;
    float s = 0.f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = static_cast<float>(row[c]);
        s += v * v;
    }
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffff, s, off);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < (blockDim.x >> 5) ? warp_sums[threadIdx.x] : 0.f;
        for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffff, s, off);
        if (threadIdx.x == 0) sumsq[blockIdx.x] = s;
    }
}

template <typename T>
__global__ void rms_scale(const T* __restrict__ x, const float* __restrict__ sumsq, const T* __restrict__ weight,
                          T* __restrict__ out, int64_t cols, float global_hidden, float eps) {
    const int64_t r = blockIdx.x;
    const float inv = rsqrtf(sumsq[r] + eps);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        const T y = static_cast<T>(static_cast<float>(x[r * cols + c]) * inv);
        out[r * cols + c] = static_cast<T>(static_cast<float>(weight[c]) * static_cast<float>(y));
    }
}

torch::Tensor sum_squares(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2, "a 2-d CUDA tensor expected");
    auto src = x.contiguous();
    auto out = torch::empty({src.size(0), 1}, src.options().dtype(torch::kFloat32));
    if (src.size(0) == 0) return out;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, src.scalar_type(), "row_sumsq", [&] {
        row_sumsq<scalar_t><<<(unsigned)src.size(0), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
            src.data_ptr<scalar_t>(), out.data_ptr<float>(), src.size(1));
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}

torch::Tensor normalise(torch::Tensor x, torch::Tensor sumsq, torch::Tensor weight, double global_hidden, double eps) {
    auto src = x.contiguous();
    auto w = weight.contiguous();
    auto out = torch::empty_like(src);
    if (src.numel() == 0) return out;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, src.scalar_type(), "rms_scale", [&] {
        rms_scale<scalar_t><<<(unsigned)src.size(0), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
            src.data_ptr<scalar_t>(), sumsq.contiguous().data_ptr<float>(), w.data_ptr<scalar_t>(),
            out.data_ptr<scalar_t>(), src.size(1), (float)global_hidden, (float)eps);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""
CPP = """
torch::Tensor sum_squares(torch::Tensor x);
torch::Tensor normalise(torch::Tensor x, torch::Tensor sumsq, torch::Tensor weight, double global_hidden, double eps);
"""
ext = compile_cuda_extension("gpu_run_p18_rms", CUDA, CPP, ["sum_squares", "normalise"])


def solution(local_hidden_states: torch.Tensor, local_weight: torch.Tensor, variance_epsilon: float) -> torch.Tensor:
    sumsq = ext.sum_squares(local_hidden_states)
    world = dist.get_world_size()
    if world > 1:
        dist.all_reduce(sumsq, op=dist.ReduceOp.SUM)
    global_hidden = local_hidden_states.shape[-1] * world
    return ext.normalise(
        local_hidden_states,
        sumsq,
        local_weight.to(local_hidden_states.dtype),
        float(global_hidden),
        float(variance_epsilon),
    )
