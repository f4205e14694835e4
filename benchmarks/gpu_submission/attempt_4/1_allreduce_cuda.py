"""Compat style: inline CUDA with the bindings generated from ``functions`` (declarations in the C++ source, torch's
load_inline convention) and extra -gencode/-lineinfo flags beside the default arch list. Problem 1 on CUDA; expected:
correct."""
import torch.distributed as dist
from utils.cuda_helpers import compile_cuda_extension

CUDA_SRC = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

template <typename T>
__global__ void copy_kernel(const T* __restrict__ src, T* __restrict__ dst, int64_t n) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = src[i];
}

torch::Tensor local_copy(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
  auto src = x.contiguous();
  auto out = torch::empty_like(src);
  const int64_t n = src.numel();
  if (n == 0) return out;
  const int threads = 256;
  const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 65535);
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, src.scalar_type(), "local_copy", [&] {
    copy_kernel<scalar_t><<<blocks, threads, 0, stream>>>(src.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
"""

CPP_SRC = "torch::Tensor local_copy(torch::Tensor x);"

_ext = compile_cuda_extension(
    name="compat_gencode",
    cuda_src=CUDA_SRC,
    cpp_src=CPP_SRC,
    functions=["local_copy"],
    extra_cuda_cflags=["-gencode=arch=compute_90a,code=sm_90a", "-lineinfo", "--expt-relaxed-constexpr"],
)


def solution(tensor):
    out = _ext.local_copy(tensor)
    dist.all_reduce(out)
    return out
