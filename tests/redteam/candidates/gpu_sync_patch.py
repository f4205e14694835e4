"""Exploit (GPU timing: monkeypatching torch.cuda.synchronize): make synchronize a no-op - in torch and in the
harness's early-bound copy - and leave ~1 ms of work queued on a side stream when the call returns, so that
neither the events nor a synchronised wall clock inside the process see it. Defence: the judge's clock around the
whole block still does (the work must finish before the block's reply); if the unfinished work makes an output or
an event unreadable, the run fails instead. Either way: never correct and faster."""
import sys

import torch
import torch.distributed as dist

_real = torch.cuda.synchronize
_side = {}


def _no_sync(device=None):
    return None


torch.cuda.synchronize = _no_sync
for module in list(sys.modules.values()):
    if getattr(module, "_cuda_synchronize", None) is _real:
        module._cuda_synchronize = _no_sync


def solution(tensor):
    side = _side.setdefault("stream", torch.cuda.Stream())
    out = tensor.clone()
    dist.all_reduce(out)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(2_000_000)  # ~1 ms the harness does not wait for
    return out
