"""Compat style: a C++ (CPU) extension compiled lazily on the first call of solution() through
utils.cuda_helpers.compile_cuda_extension, PYBIND11 module in the source; the copy is done by the extension, the
reduction by torch.distributed. Problem 1 on CPU; expected: correct."""
import torch.distributed as dist
from utils.cuda_helpers import compile_cuda_extension

CPP = r"""
#include <torch/extension.h>

torch::Tensor local_copy(torch::Tensor x) {
  auto src = x.contiguous();
  auto out = torch::empty_like(src);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, src.scalar_type(), "local_copy", [&] {
    const scalar_t* s = src.data_ptr<scalar_t>();
    scalar_t* d = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < src.numel(); ++i) d[i] = s[i];
  });
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("local_copy", &local_copy, "copy into a new tensor"); }
"""

_ext = None


def solution(tensor):
    global _ext
    if _ext is None:
        _ext = compile_cuda_extension("compat_lazy_cpp", cpp_source=CPP, extra_cflags=["-Wno-unused-variable"])
    out = _ext.local_copy(tensor)
    if dist.get_world_size() > 1:
        dist.all_reduce(out)
    return out
