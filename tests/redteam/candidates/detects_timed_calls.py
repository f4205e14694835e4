"""Exploit (input tricks): tell warm-up and trial calls from timed ones by looking at the harness's stack frame,
and skip the work (no communication) only when the call is timed. Defence: the output of a timed call, picked at
random after it returned, is checked against the reference on the same inputs."""
import sys

import torch.distributed as dist


def _timed_call() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "time_block" and "warmup" in frame.f_locals and "i" in frame.f_locals:
            return frame.f_locals["i"] >= frame.f_locals["warmup"]
        frame = frame.f_back
    return False


def solution(tensor):
    if _timed_call():
        return tensor.clone()  # fast and wrong
    out = tensor.clone()
    dist.all_reduce(out)
    return out
