"""Exploit (timing: work moved into warm-up): on the first warm-up call of each timing block, reach into the
harness's frame, take every input set the block will use (or rebuild them with the harness's own builder), compute
all the answers there (10 ms of "kernel" each, like honest_slow.py), then answer every timed call from the cache.
The answers are right and the timed calls are ~free. Defence: the judge's own clock around the block sees the work
(the median-based cross-check), so the result is flagged and never ranks."""
import hashlib
import sys
import time

import torch.distributed as dist

WORK_S = 0.010
_cache = {}


def _key(tensor):
    return hashlib.sha1(tensor.float().cpu().numpy().tobytes()).hexdigest()


def _honest(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    time.sleep(WORK_S)
    return out


def _harness():
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "time_block" and "sets" in frame.f_locals:
            return frame.f_locals
        frame = frame.f_back
    return None


def solution(tensor):
    h = _harness()
    if h is not None and h["i"] == 0:
        sets = h["sets"]  # the block's input sets (evaluator/rank/timed.py, InputSets)
        for k in range(sets.calls):
            inputs = sets.pool[k] if k < len(sets.pool) and sets.pool[k] is not None else sets.build(k)
            _cache[_key(inputs[0])] = _honest(inputs[0])
    hit = _cache.get(_key(tensor))
    return hit.clone() if hit is not None else _honest(tensor)
