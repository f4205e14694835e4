"""Exploit (the reply pipe): 256 MiB with no newline. The judge's reader kept appending to one buffer (quadratic
copies, hundreds of MiB of judge memory) and looked at its deadline only between reads, so a steady writer held it
far past the job's timeout. A reply line is capped and the deadline is checked while data flows: runtime_error,
within the timeout, with the judge's memory bounded."""
import os
import sys

import torch.distributed as dist

TOTAL = 256 << 20


def solution(tensor):
    fd = int(sys.argv[sys.argv.index("--reply-fd") + 1])
    chunk = b"x" * (1 << 20)
    for _ in range(TOTAL // len(chunk)):
        os.write(fd, chunk)  # blocks once the judge stops reading: the judge must not wait for it
    out = tensor.clone()
    dist.all_reduce(out)
    return out
