"""Backends a candidate may use here, and the one test of a source for a backend this judge cannot build.

Torch-free and standard-library only: the judge's static checks (evaluator/judge/policy.py, verdict ``compile_error``)
and the site's upload parser (through evaluator/contract/schema.py, which refuses such a file at once) use the same
function.
"""

from __future__ import annotations

import re

# Backends whose runtime this judge does not ship: (what gives the backend away in the source, its name, why).
UNSUPPORTED_BACKENDS = [
    (
        re.compile(
            r"\bparallelkittens_runtime\b|^\s*(?:from|import)\s+parallelkittens\b|[<\"]kittens\.cuh[>\"]", re.MULTILINE
        ),
        "ParallelKittens",
        "its runtime (utils.parallelkittens_runtime) and the ThunderKittens headers are not shipped",
    )
]
SUPPORTED_BACKENDS = (
    "CUDA (inline or file sources through utils.cuda_helpers.compile_cuda_extension or torch.utils.cpp_extension)",
    "Triton (with utils.triton_utils)",
    "PyTorch (torch.distributed, torch.distributed._symmetric_memory without multicast)",
)


def _code_lines(source: str) -> str:
    """The source without whole-line Python comments: a kernel that only mentions a backend in a comment runs."""
    return "\n".join(
        "" if line.lstrip().startswith("#") and not line.lstrip().startswith("#include") else line
        for line in source.splitlines()
    )


def unsupported_backend(filename: str, source: str) -> str | None:
    """A message naming the backend ``source`` needs that this judge does not support, and those it does; None when
    every backend it uses is supported. Used by the judge's static checks (verdict ``compile_error``: the file cannot
    be built here, which is not a rule it broke) and by the upload path, which refuses such a file at once."""
    code = _code_lines(source)
    for pattern, backend, why in UNSUPPORTED_BACKENDS:
        found = pattern.search(code)
        if found:
            line = code.count("\n", 0, found.start()) + 1
            name = filename or "the candidate"
            return (
                f"{name}, line {line}: the {backend} backend is not supported here ({why}); supported backends: "
                + "; ".join(SUPPORTED_BACKENDS)
            )
    return None
