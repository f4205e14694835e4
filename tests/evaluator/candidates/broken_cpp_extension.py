"""A C++ extension that does not compile, built lazily on the first call (a pybind11-only source file, as
light_cpp_extension.py, so that the failure comes in a second or two): the build stage reports compile_error with the
compiler's message, so its GPU job never has to run. Problem 1; expected: compile_error."""
import os

from utils.cuda_helpers import compile_cuda_extension

CPP = r"""
#include <pybind11/pybind11.h>
int broken() { return this_method_does_not_exist(); }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("broken", &broken); }
"""
SOURCE = "/tmp/pkb_broken_cpp_extension.cpp"


def solution(tensor):
    partial = f"{SOURCE}.{os.getpid()}"
    with open(partial, "w") as f:
        f.write(CPP)
    os.replace(partial, SOURCE)
    return tensor * compile_cuda_extension("broken_cpp", cpp_source=SOURCE).broken()
