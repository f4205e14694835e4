"""A C++ extension that does not compile, built lazily on the first call: the build stage reports compile_error
with the compiler's message, so its GPU job never has to run. Problem 1; expected: compile_error."""
from utils.cuda_helpers import compile_cuda_extension

CPP = r"""
#include <torch/extension.h>
torch::Tensor broken(torch::Tensor x) { return x.this_method_does_not_exist(); }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("broken", &broken, "broken"); }
"""


def solution(tensor):
    return compile_cuda_extension("broken_cpp", cpp_source=CPP).broken(tensor)
