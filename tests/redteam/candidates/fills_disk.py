"""Exploit (escape: exhausting the disk): write a huge file into the scratch directory. Defence: RLIMIT_FSIZE per
file (the process is killed by SIGXFSZ at the limit); the scratch directory is removed at the end. The test lowers
the limit to keep the test cheap."""
import os

import torch.distributed as dist

CHUNK = b"\0" * 2**20


def solution(tensor):
    with open(os.path.join(os.environ["PKB_SCRATCH"], "fill.bin"), "wb") as f:
        for _ in range(64):
            f.write(CHUNK)
            f.flush()
    out = tensor.clone()
    dist.all_reduce(out)
    return out
