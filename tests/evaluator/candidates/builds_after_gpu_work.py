"""A kernel the build stage cannot reach: its first call fails where the stage runs it (a world of one rank stands
in for "no GPU yet") before any compile call, and builds its C++ extension only in the real job. The stage reports
``unreached`` and the job builds it as without a stage. Problem 1 on CPU; expected: correct at W >= 2."""
import torch.distributed as dist
from utils.cuda_helpers import compile_cuda_extension

CPP = r"""
#include <torch/extension.h>
torch::Tensor local_copy(torch::Tensor x) { return x.clone(); }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("local_copy", &local_copy, "copy"); }
"""

_ext = None


def solution(tensor):
    global _ext
    out = tensor.clone()
    dist.all_reduce(out)  # the collective first, then the build
    if dist.get_world_size() == 1:
        raise RuntimeError("this kernel needs its GPU before it builds")
    if _ext is None:
        _ext = compile_cuda_extension("late_cpp", cpp_source=CPP)
    return _ext.local_copy(out)
