"""Exploit (input tricks): cache outputs by a hash of the input's content (a cheap sample of it, as a real cheat
would) and skip the work when the same inputs come back (same seed across trials or timing blocks, rotating
clones). Every call now gets distinct inputs: no hit, no gain. Logs every hit."""
import hashlib
import sys

import torch.distributed as dist

_cache = {}


def _key(tensor):
    flat = tensor.reshape(-1)
    sample = flat[:: max(1, flat.numel() // 64)].float().cpu().numpy().tobytes()
    return hashlib.sha1(sample).hexdigest(), tuple(tensor.shape)


def solution(tensor):
    key = _key(tensor)
    if key in _cache:
        print(f"cache_by_content: HIT {key[0][:12]}", file=sys.stderr)
        return _cache[key].clone()
    out = tensor.clone()
    dist.all_reduce(out)
    _cache[key] = out
    return out
