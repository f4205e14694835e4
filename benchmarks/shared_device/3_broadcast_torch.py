"""Problem 3 (out-of-place broadcast from rank 0), torch.distributed: a binomial tree of send/recv.

At level k (k = 1, 2, 4, ...) every rank below k that already holds the data sends it to rank + k; a rank in
[k, 2k) receives from rank - k. log2(W) levels; every rank returns its copy, the root a clone of its input.
"""

import torch
import torch.distributed as dist


def solution(tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
    world, rank = dist.get_world_size(), dist.get_rank()
    me = (rank - src) % world  # position in the tree rooted at src
    out = tensor.clone()
    step = 1
    while step < world:
        if me < step and me + step < world:
            dist.send(out, (me + step + src) % world)
        elif step <= me < 2 * step:
            dist.recv(out, (me - step + src) % world)
        step *= 2
    return out
