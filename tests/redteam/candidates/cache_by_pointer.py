"""Exploit (input tricks): cache outputs by the input's data pointer and id, and return the cached tensor when the
harness reuses a buffer (rotating clones of one input, or the allocator recycling an address). The ranks agree on
a hit (a one-element all-reduce) so that none is left waiting in a collective. Each call now gets its own inputs: a
hit is a stale answer (wrong), and no hit means no gain. Logs every hit."""
import sys

import torch
import torch.distributed as dist

_cache = {}


def solution(tensor):
    key = (tensor.data_ptr(), id(tensor), tuple(tensor.shape))
    everyone = torch.tensor([1 if key in _cache else 0])
    dist.all_reduce(everyone, op=dist.ReduceOp.MIN)
    if everyone.item():
        print(f"cache_by_pointer: HIT {key[0]:#x}", file=sys.stderr)
        return _cache[key]
    out = tensor.clone()
    dist.all_reduce(out)
    _cache[key] = out
    return out
