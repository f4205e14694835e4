"""Exploit (escape: exhausting GPU memory): after answering its first call, take all free GPU memory and keep it,
so that the reference (on the same GPU) runs out of memory - a reference failure is an infra_error, retried and
never counted. Defence: a reference failure is re-run without the candidate; if it passes alone, the candidate is
blamed (runtime_error). Plain allocations only (no managed memory)."""
import sys

import torch
import torch.distributed as dist

_hoard = []


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    if not _hoard:
        torch.cuda.synchronize()
        chunk = 2**30
        while True:
            try:
                _hoard.append(torch.empty(chunk, dtype=torch.uint8, device=tensor.device))
            except torch.OutOfMemoryError:
                if chunk <= 2**24:
                    break
                chunk //= 4
        print(f"gpu_memory_hog: holding {sum(t.numel() for t in _hoard) / 2**30:.1f} GiB", file=sys.stderr)
    return out
