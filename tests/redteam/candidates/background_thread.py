"""Exploit (timing: work finishing after the window, in a background thread): honest in trials; in timing blocks it
returns an output buffer at once and lets a thread finish the expensive part (10 ms) after the timed window closed.
Defence: the kept output of a timed call is copied the moment the call returns (the judge later finds it wrong);
and the judge's clock sees the extra work."""
import sys
import threading
import time

import torch
import torch.distributed as dist


def _in_timing() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "time" and "warmup" in frame.f_locals:
            return True
        frame = frame.f_back
    return False


def _finish(out, reduced):
    time.sleep(0.010)  # the expensive kernel
    out.copy_(reduced)


def solution(tensor):
    reduced = tensor.clone()
    dist.all_reduce(reduced)
    if not _in_timing():
        time.sleep(0.010)
        return reduced
    out = torch.empty_like(tensor)
    threading.Thread(target=_finish, args=(out, reduced), daemon=True).start()
    return out
