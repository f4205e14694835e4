"""evaluator.contract.backends.unsupported_backend: a ParallelKittens kernel is recognised (an import of its runtime, or
the ThunderKittens header in an inline source) and told apart from one that only mentions it in a comment."""

from evaluator.judge import policy


def test_parallelkittens_imports_and_headers_are_named_with_the_supported_backends():
    for source in (
        "from utils.parallelkittens_runtime import load\n",
        "import torch\nimport parallelkittens as pk\n",
        "import importlib\nrt = importlib.import_module('utils.parallelkittens_runtime')\n",
        'CUDA = r"""\n#include "kittens.cuh"\n__global__ void k() {}\n"""\n',
    ):
        message = policy.unsupported_backend("13_gemm_allreduce_pk.py", source)
        assert message and "the ParallelKittens backend is not supported here" in message, source
        assert message.startswith("13_gemm_allreduce_pk.py, line ") and "supported backends: CUDA" in message
    assert "line 2:" in policy.unsupported_backend("k.py", "import torch\nimport parallelkittens\n")


def test_other_kernels_pass():
    assert (
        policy.unsupported_backend("k.py", "# ported from a utils.parallelkittens_runtime kernel\nimport torch\n")
        is None
    )
    assert (
        policy.unsupported_backend("k.py", "import triton\nfrom utils.cuda_helpers import compile_cuda_extension\n")
        is None
    )
    assert policy.unsupported_backend("k.py", "#include <cuda_bf16.h>\n") is None
