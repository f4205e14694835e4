"""Static policy checks on candidate source, before anything runs.

NVLink multicast (the ``multimem`` PTX instructions, the CUDA driver's multicast-object API, torch symmetric memory's
multicast pointers, NVSHMEM/NCCL NVLS switches) can take a shared host's GPUs out of service; hosts whose profile
forbids it refuse such candidates with verdict ``policy_violation`` and the offending line.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Optional

# NAME then quotes, brackets, spaces, '=', ':' or ',' then the value: os.environ["NAME"] = "1", NAME=1, {"NAME": "1"}.
_SETTING = r"{name}['\"\]\s:=,]*['\"]?{value}\b"

MULTICAST_PATTERNS = [
    (re.compile(r"multimem\s*\.", re.IGNORECASE), "PTX multimem instruction (NVLink multicast)"),
    # Written as a character class so that a repository-wide grep for the API name finds only real uses.
    (re.compile(r"\bcuMulti[c]ast\w*"), "CUDA driver multicast API"),
    (re.compile(r"\bmulticast_ptr\b"), "symmetric-memory multicast pointer"),
    (re.compile(r"\bmc_ptr\b|\bmulticast_addr\b"), "multicast address"),
    (re.compile(_SETTING.format(name="NCCL_NVLS_ENABLE", value="1")), "re-enabling NCCL NVLink SHARP (NVLS)"),
    (re.compile(_SETTING.format(name="TORCH_SYMM_MEM_DISABLE_MULTICAST", value="0")), "re-enabling symmetric-memory multicast"),
    (re.compile(_SETTING.format(name="NVSHMEM_DISABLE_NVLS", value="0")), "re-enabling NVSHMEM NVLS"),
]


@dataclasses.dataclass
class Violation:
    line: int
    text: str
    rule: str

    def message(self) -> str:
        return f"line {self.line}: {self.rule} is not allowed on this host profile: {self.text.strip()[:200]}"


def scan(source: str, multicast_allowed: bool) -> Optional[Violation]:
    if multicast_allowed:
        return None
    for number, line in enumerate(source.splitlines(), start=1):
        for pattern, rule in MULTICAST_PATTERNS:
            if pattern.search(line):
                return Violation(number, line, rule)
    return None


# Backends whose runtime this judge does not ship: (what gives the backend away in the source, its name, why).
UNSUPPORTED_BACKENDS = [
    (re.compile(r"\bparallelkittens_runtime\b|^\s*(?:from|import)\s+parallelkittens\b|[<\"]kittens\.cuh[>\"]",
                re.MULTILINE),
     "ParallelKittens", "its runtime (utils.parallelkittens_runtime) and the ThunderKittens headers are not shipped"),
]
SUPPORTED_BACKENDS = ("CUDA (inline or file sources through utils.cuda_helpers.compile_cuda_extension or "
                      "torch.utils.cpp_extension)", "Triton (with utils.triton_utils)",
                      "PyTorch (torch.distributed, torch.distributed._symmetric_memory without multicast)")


def _code_lines(source: str) -> str:
    """The source without whole-line Python comments: a kernel that only mentions a backend in a comment runs."""
    return "\n".join("" if line.lstrip().startswith("#") and not line.lstrip().startswith("#include") else line
                     for line in source.splitlines())


def unsupported_backend(filename: str, source: str) -> Optional[str]:
    """A message naming the backend ``source`` needs that this judge does not support, and those it does; None when
    every backend it uses is supported. Used by the judge's static checks (verdict ``compile_error``: the file cannot
    be built here, which is not a rule it broke) and by the upload path, which refuses such a file at once."""
    code = _code_lines(source)
    for pattern, backend, why in UNSUPPORTED_BACKENDS:
        found = pattern.search(code)
        if found:
            line = code.count("\n", 0, found.start()) + 1
            name = filename or "the candidate"
            return (f"{name}, line {line}: the {backend} backend is not supported here ({why}); supported backends: "
                    + "; ".join(SUPPORTED_BACKENDS))
    return None
