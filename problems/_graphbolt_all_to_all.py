"""GraphBolt's rank-shifted all_to_all, shared by problems 65 (feature exchange) and 66 (its backward).

In GraphBolt's wrapper, list position i refers to peer (rank + i) mod W, both for what is sent and for what is
received. With the usual rule (position j <-> rank j) that is both lists rotated right by the caller's rank.
"""

import torch.distributed as dist

from problems._uneven_all_to_all import all_to_all_list


def rank_shifted_all_to_all(out_chunks, in_chunks, group=None) -> None:
    """Send in_chunks[i] to rank (r + i) % W and receive out_chunks[i] from it (chunks are written in place)."""
    W, r = dist.get_world_size(group), dist.get_rank(group)
    outputs = [out_chunks[(j - r) % W] for j in range(W)]
    inputs = [in_chunks[(j - r) % W].contiguous() for j in range(W)]
    all_to_all_list(outputs, inputs, group=group)
