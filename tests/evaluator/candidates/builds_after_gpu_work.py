"""A kernel the build stage cannot reach: its first call fails where the stage runs it (a world of one rank stands
in for "no GPU yet") before any compile call, and builds its C++ extension (a pybind11-only source file, as
light_cpp_extension.py) only in the real job. The stage reports ``unreached`` and the job builds it as without a
stage. Problem 1 on CPU; expected: correct at W >= 2."""
import os

import torch.distributed as dist
from utils.cuda_helpers import compile_cuda_extension

CPP = r"""
#include <pybind11/pybind11.h>
int copies() { return 1; }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("copies", &copies); }
"""
SOURCE = "/tmp/pkb_late_cpp_extension.cpp"

_ext = None


def solution(tensor):
    global _ext
    out = tensor.clone()
    dist.all_reduce(out)  # the collective first, then the build
    if dist.get_world_size() == 1:
        raise RuntimeError("this kernel needs its GPU before it builds")
    if _ext is None:
        partial = f"{SOURCE}.{os.getpid()}"
        with open(partial, "w") as f:
            f.write(CPP)
        os.replace(partial, SOURCE)
        _ext = compile_cuda_extension("late_cpp", cpp_source=SOURCE)
    return out * _ext.copies()
