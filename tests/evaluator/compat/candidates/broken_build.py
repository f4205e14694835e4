"""Compat style: an extension that does not compile (a typo in the C++), built lazily inside solution().
Expected: compile_error, with the compiler's first error line (the undeclared name) and the log's tail."""
import torch.distributed as dist
from utils.cuda_helpers import compile_cuda_extension

CPP = r"""
#include <torch/extension.h>

torch::Tensor local_copy(torch::Tensor x) {
  return x.clone() + undeclared_offset;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("local_copy", &local_copy); }
"""

_ext = None


def solution(tensor):
    global _ext
    if _ext is None:
        _ext = compile_cuda_extension("compat_broken", cpp_source=CPP)
    out = _ext.local_copy(tensor)
    dist.all_reduce(out)
    return out
