"""Exploit (timing: monkeypatching the clock): make time.perf_counter - and the harness's own early-bound copy of it -
run at a tenth of real speed, so every CPU timing sample is 10x too small. Does the work honestly, 40 ms per call:
the nine tenths hidden from the samples (36 ms a call) stand well above what the cross-check allows a loaded CPU host
(about 11 ms).
Defence: the judge's own clock, in its own process, around each block: flagged, never ranked."""
import sys
import time

import torch.distributed as dist

_real = time.perf_counter
_origin = _real()


def _slow_clock():
    return _origin + (_real() - _origin) * 0.1


time.perf_counter = _slow_clock
for module in list(sys.modules.values()):
    if getattr(module, "_perf_counter", None) is _real:
        module._perf_counter = _slow_clock


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    time.sleep(0.040)
    return out
