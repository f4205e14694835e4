"""Static policy checks on candidate source, before anything runs.

NVLink multicast (the ``multimem`` PTX instructions, the CUDA driver's multicast-object API, torch symmetric memory's
multicast pointers, NVSHMEM/NCCL NVLS switches) can take a shared host's GPUs out of service; hosts whose profile
forbids it refuse such candidates with verdict ``policy_violation`` and the offending line.
"""

from __future__ import annotations

import dataclasses
import re

# NAME then quotes, brackets, spaces, '=', ':' or ',' then the value: os.environ["NAME"] = "1", NAME=1, {"NAME": "1"}.
_SETTING = r"{name}['\"\]\s:=,]*['\"]?{value}\b"

MULTICAST_PATTERNS = [
    (re.compile(r"multimem\s*\.", re.IGNORECASE), "PTX multimem instruction (NVLink multicast)"),
    # Written as a character class so that a repository-wide grep for the API name finds only real uses.
    (re.compile(r"\bcuMulti[c]ast\w*"), "CUDA driver multicast API"),
    (re.compile(r"\bmulticast_ptr\b"), "symmetric-memory multicast pointer"),
    (re.compile(r"\bmc_ptr\b|\bmulticast_addr\b"), "multicast address"),
    (re.compile(_SETTING.format(name="NCCL_NVLS_ENABLE", value="1")), "re-enabling NCCL NVLink SHARP (NVLS)"),
    (
        re.compile(_SETTING.format(name="TORCH_SYMM_MEM_DISABLE_MULTICAST", value="0")),
        "re-enabling symmetric-memory multicast",
    ),
    (re.compile(_SETTING.format(name="NVSHMEM_DISABLE_NVLS", value="0")), "re-enabling NVSHMEM NVLS"),
]


@dataclasses.dataclass
class Violation:
    line: int
    text: str
    rule: str

    def message(self) -> str:
        return f"line {self.line}: {self.rule} is not allowed on this host profile: {self.text.strip()[:200]}"


def scan(source: str, multicast_allowed: bool) -> Violation | None:
    if multicast_allowed:
        return None
    for number, line in enumerate(source.splitlines(), start=1):
        for pattern, rule in MULTICAST_PATTERNS:
            if pattern.search(line):
                return Violation(number, line, rule)
    return None


# Backends the judge cannot build (evaluator/contract/backends.py; the site checks uploads with the same function).
from evaluator.contract.backends import SUPPORTED_BACKENDS, UNSUPPORTED_BACKENDS, unsupported_backend  # noqa: E402,F401
