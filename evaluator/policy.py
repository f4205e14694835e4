"""Static policy checks on candidate source, before anything runs.

NVLink multicast (the ``multimem`` PTX instructions, the driver's ``cuMulticast*`` API, torch symmetric memory's
multicast pointers, NVSHMEM/NCCL NVLS switches) can take a shared host's GPUs out of service; hosts whose profile
forbids it refuse such candidates with verdict ``policy_violation`` and the offending line.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Optional

MULTICAST_PATTERNS = [
    (re.compile(r"multimem\s*\.", re.IGNORECASE), "PTX multimem instruction (NVLink multicast)"),
    (re.compile(r"\bcuMulticast\w*"), "CUDA driver multicast API"),
    (re.compile(r"\bmulticast_ptr\b"), "symmetric-memory multicast pointer"),
    (re.compile(r"\bmc_ptr\b|\bmulticast_addr\b"), "multicast address"),
    (re.compile(r"NCCL_NVLS_ENABLE\s*['\"]?\s*[\]:=,]\s*['\"]?\s*1"), "re-enabling NCCL NVLink SHARP (NVLS)"),
    (re.compile(r"TORCH_SYMM_MEM_DISABLE_MULTICAST\s*['\"]?\s*[\]:=,]\s*['\"]?\s*0"), "re-enabling symmetric-memory multicast"),
    (re.compile(r"NVSHMEM_DISABLE_NVLS\s*['\"]?\s*[\]:=,]\s*['\"]?\s*0"), "re-enabling NVSHMEM NVLS"),
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
