"""Compat style: a CUDA extension with a device-code error (a misspelt built-in), compiled on the first call of
solution(). Expected: compile_error whose first error line is nvcc's, naming the misspelt name."""
import torch.distributed as dist
from utils.cuda_helpers import compile_cuda_extension

CUDA_SRC = r"""
#include <torch/extension.h>

__global__ void fill_kernel(float* out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDimx.x + threadIdx.x;
  if (i < n) out[i] = 1.0f;
}

torch::Tensor filled(torch::Tensor x) {
  auto out = torch::empty(x.sizes(), x.options().dtype(torch::kFloat32));
  fill_kernel<<<(out.numel() + 255) / 256, 256>>>(out.data_ptr<float>(), out.numel());
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("filled", &filled); }
"""

_ext = None


def solution(tensor):
    global _ext
    if _ext is None:
        _ext = compile_cuda_extension("compat_broken_cuda", cuda_source=CUDA_SRC)
    out = _ext.filled(tensor).to(tensor.dtype)
    dist.all_reduce(out)
    return out
