"""Compat style: the usual pattern of generated kernels: the CUDA extension is compiled on the first call of
solution() (PYBIND11 module in the CUDA source) and kept in a module global. Problem 1 on CUDA; expected: correct."""
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

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("local_copy", &local_copy, "copy on the GPU"); }
"""

_ext = None


def solution(tensor):
    global _ext
    if _ext is None:
        _ext = compile_cuda_extension("compat_lazy_cuda", cuda_source=CUDA_SRC, verbose=False)
    out = _ext.local_copy(tensor)
    if dist.get_world_size() > 1:
        dist.all_reduce(out)
    return out
