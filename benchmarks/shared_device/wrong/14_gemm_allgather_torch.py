"""PLANTED WRONG: the gathered (W, M, N_local) blocks are reshaped without moving W next to the columns, so rows and
blocks are interleaved.

Problem 14 (local column-block GEMM, then all-gather along columns), torch.distributed: all_gather_into_tensor.

Each rank's (M, N_local) block is gathered into one flat buffer (rank order), viewed as (W, M, N_local) and laid
out as the (M, W * N_local) output: block s becomes columns [s * N_local, (s + 1) * N_local).
"""

import torch
import torch.distributed as dist


def solution(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    local = (A @ B).contiguous()
    gathered = torch.empty(world * local.numel(), dtype=local.dtype, device=local.device)
    dist.all_gather_into_tensor(gathered, local.reshape(-1))
    blocks = gathered.view(world, *local.shape)
    return blocks.reshape(local.shape[0], world * local.shape[1])
