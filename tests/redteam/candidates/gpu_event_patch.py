"""Exploit (GPU timing: monkeypatching torch.cuda.Event.elapsed_time): report a tenth of the measured time, in
torch and in the harness's early-bound copy. Does ~1 ms of honest work per call. Defence: the judge's clock."""
import sys

import torch
import torch.distributed as dist

_real = torch.cuda.Event.elapsed_time


def _fast(self, end):
    return _real(self, end) * 0.1


torch.cuda.Event.elapsed_time = _fast
for module in list(sys.modules.values()):
    if getattr(module, "_elapsed_time", None) is _real:
        module._elapsed_time = _fast


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    torch.cuda._sleep(2_000_000)  # ~1 ms of "kernel"
    return out
