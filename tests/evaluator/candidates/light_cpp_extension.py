"""A C++ extension built lazily on the first call, for the tests of the build machinery (the build stage, the cache,
one build per job): a real compile, link and import through compile_cuda_extension, from a source file the kernel
writes (torch's ``load``, the file path of the helper) that includes pybind11 alone. It builds in a few seconds where
a source including torch/extension.h (every inline source: load_inline adds it) takes about twenty on a 2-core
machine; the inline path keeps its own tests (compat/, test_cuda_helpers.py). Problem 1 on CPU; expected: correct."""
import os

import torch.distributed as dist
from utils.cuda_helpers import compile_cuda_extension

CPP = r"""
#include <pybind11/pybind11.h>
int copies() { return 1; }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("copies", &copies); }
"""
# One path for every rank, for the build stage and for the job: the path is part of the build's fingerprint.
SOURCE = "/tmp/pkb_light_cpp_extension.cpp"

_ext = None


def _source() -> str:
    partial = f"{SOURCE}.{os.getpid()}"
    with open(partial, "w") as f:
        f.write(CPP)
    os.replace(partial, SOURCE)  # whole or absent: ranks writing it at once never read half a file
    return SOURCE


def solution(tensor):
    global _ext
    if _ext is None:
        _ext = compile_cuda_extension("light_cpp", cpp_source=_source())
    out = tensor.clone() * _ext.copies()
    if dist.get_world_size() > 1:
        dist.all_reduce(out)
    return out
