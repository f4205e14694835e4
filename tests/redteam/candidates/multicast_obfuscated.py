"""Policy (NVLink multicast, documented limit): the static scan looks for multicast PTX, driver APIs and settings in
the source; a string assembled at run time escapes it (this file passes the scan). It never runs anything with it
- nothing here may run multicast code. The runtime defence is the environment every rank gets (multicast switched
off for NCCL, symmetric memory and NVSHMEM); this candidate reports what it sees."""
import os
import sys

import torch.distributed as dist

INSTRUCTION = "multi" + "mem" + ".ld_reduce.relaxed.sys.global.add.f32"  # built at run time, never used
SETTINGS = ("NCCL" + "_NVLS_ENABLE", "TORCH_SYMM_MEM" + "_DISABLE_MULTICAST", "NVSHMEM" + "_DISABLE_NVLS")
print("multicast_obfuscated: " + " ".join(f"{k}={os.environ.get(k)}" for k in SETTINGS), file=sys.stderr)


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
