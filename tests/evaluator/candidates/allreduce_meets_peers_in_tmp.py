"""Ranks of one group must meet in one TMPDIR: torch's symmetric memory names the Unix sockets that carry CUDA IPC
handles $TMPDIR/symm_mem-<pid>, and a peer looks for them under its own TMPDIR. Fails unless every rank's marker
is visible to every other rank after a barrier."""
import os
import tempfile

import torch.distributed as dist


def solution(tensor):
    rank, world = dist.get_rank(), dist.get_world_size()
    tmp = tempfile.gettempdir()
    with open(os.path.join(tmp, f"marker-rank{rank}"), "w") as f:
        f.write(str(os.getpid()))
    dist.barrier()
    missing = [r for r in range(world) if not os.path.exists(os.path.join(tmp, f"marker-rank{r}"))]
    if missing:
        raise RuntimeError(f"rank {rank} cannot see the markers of ranks {missing} in its TMPDIR {tmp}")
    out = tensor.clone()
    dist.all_reduce(out)
    return out
