"""Exploit (the build log): the judge reads the group's build log (PKB_BUILD_LOG, one JSON line per build) after
the candidate is gone, in its own clean-up. A line of 100,000 '[' raised RecursionError out of that clean-up (the
judge crashed: an infra_error at the candidate's will), and a FIFO in its place would have blocked the judge for
good. The log is read only as a plain file and a garbled one is reported as unreadable; the verdict is the
kernel's own (here correct: the log is informational)."""
import os

import torch.distributed as dist

MODE = "__MODE__"  # "deep" or "fifo"


def _plant() -> None:
    path = os.environ["PKB_BUILD_LOG"]
    if MODE == "fifo":
        try:
            os.mkfifo(path)
        except FileExistsError:
            pass
    else:
        with open(path, "ab") as log:
            log.write(b"[" * 100_000 + b"\n")


_plant()


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
