"""Exploit (hidden world size): written for W = 2, and at any other world size it garbles the judge's reply pipe
(one line of 100,000 '[') instead of computing. The garbled reply used to raise out of the judge as a judge failure,
and the hidden world-size check ignored an infra_error: the kernel was judged correct. Now the garbled reply is the
candidate's runtime_error, and a hidden check that cannot be judged makes the result unverified, never correct."""
import os
import sys

import torch.distributed as dist


def solution(tensor):
    if os.environ.get("WORLD_SIZE") != "2":
        os.write(int(sys.argv[sys.argv.index("--reply-fd") + 1]), b"[" * 100_000 + b"\n")
        return tensor.clone()
    parts = [tensor.clone() for _ in range(2)]
    dist.all_gather(parts, tensor)
    return parts[0] + parts[1]
