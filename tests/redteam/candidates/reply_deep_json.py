"""Exploit (the reply pipe): write one reply line of 100,000 '[' to the judge. A JSON parser that recurses raised
RecursionError out of the judge, which called it a judge failure (infra_error, retried, never scored) at the
candidate's will. Replies are read bounded in size and depth: the rank's protocol failure, runtime_error."""
import os
import sys

import torch.distributed as dist


def _reply_fd() -> int:
    return int(sys.argv[sys.argv.index("--reply-fd") + 1])


def solution(tensor):
    os.write(_reply_fd(), b"[" * 100_000 + b"\n")
    out = tensor.clone()
    dist.all_reduce(out)
    return out
