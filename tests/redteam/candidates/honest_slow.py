"""Honest control for the timing cross-check: a correct answer that takes ~10 ms per call, all of it inside the call.

The exploits that move work out of the timed window use the same 10 ms of "work", so the cross-check must tell them
apart from this one by where the time goes, not by how much there is.
"""
import time

import torch.distributed as dist

WORK_S = 0.010


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    time.sleep(WORK_S)  # stands for an expensive kernel
    return out
