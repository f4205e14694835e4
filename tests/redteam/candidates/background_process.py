"""Exploit (timing: work finishing after the window, in another process): a helper process, forked at import, fills
a shared-memory output after the call has returned (the expensive 10 ms). Honest in trials, deferred when timed.
Defence: the kept timed output is copied when the call returns (wrong); the helper dies with the job (uid sweep)."""
import multiprocessing as mp
import sys
import time

import torch
import torch.distributed as dist


def _helper(conn):
    while True:
        out, src = conn.recv()
        time.sleep(0.010)
        out.copy_(src)


_parent, _child = mp.get_context("fork").Pipe()
mp.get_context("fork").Process(target=_helper, args=(_child,), daemon=True).start()


def _in_timing() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "time" and "warmup" in frame.f_locals:
            return True
        frame = frame.f_back
    return False


def solution(tensor):
    reduced = tensor.clone()
    dist.all_reduce(reduced)
    if not _in_timing():
        time.sleep(0.010)
        return reduced
    out = torch.empty_like(tensor).share_memory_()
    _parent.send((out, reduced.share_memory_()))
    return out
