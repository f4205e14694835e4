"""Exploit (timing: monkeypatching torch.distributed): the harness all-reduces the per-rank timing samples (float64)
with MAX; wrap all_reduce (and the harness's early-bound copy) so that float64 tensors come back divided by 10.
Does the work honestly, 40 ms per call: the nine tenths hidden from the samples (36 ms a call) stand well above what
the cross-check allows a loaded CPU host (about 11 ms). Defence: the judge's own clock: flagged, never ranked."""
import sys
import time

import torch
import torch.distributed as dist

_real = dist.all_reduce


def _all_reduce(tensor, *args, **kwargs):
    work = _real(tensor, *args, **kwargs)
    if tensor.dtype == torch.float64:
        tensor.div_(10)
    return work


dist.all_reduce = _all_reduce
for module in list(sys.modules.values()):
    if getattr(module, "_all_reduce", None) is _real:
        module._all_reduce = _all_reduce


def solution(tensor):
    out = tensor.clone()
    _real(out)
    time.sleep(0.040)
    return out
