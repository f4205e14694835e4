"""35 ulysses_all_gather_variable_primitive: all-gather of possibly unequal shards along ``gather_dim``, concatenated.

Interface as PKB: ``solution(x (M, N), gather_dim=0, group=None) -> (W*M, N)``, ``Y = cat(x_0, ..., x_{W-1})``
along ``gather_dim``, identical on every rank. The reference first all-gathers every rank's shape (int64 vectors),
reads them on the host, allocates one receive buffer per source and runs a list-form ``dist.all_gather``.

Decisions (spec Pitfalls):
- As in PKB every rank passes the same shape (M, N): the interface says so, and kernels written for PKB may rely
  on it. The reference still supports shards of unequal length along ``gather_dim`` (the tests exercise it).
- W = 1 returns the input object itself, as PKB; so at W = 1 "the input returned unchanged" is the correct answer
  (inherent, not a hole).
- The output is an exact copy; we keep PKB's allclose tolerance (tests also check bit equality).
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    ctx.seed(ctx.rank)
    return torch.randn(ctx.M, ctx.N, device=ctx.device).to(ctx.dtype), 0, None


def solution(x: torch.Tensor, gather_dim: int, group=None) -> torch.Tensor:
    world_size = dist.get_world_size(group)
    if world_size == 1:
        return x
    x = x.contiguous()
    shape = torch.tensor(x.shape, dtype=torch.int64, device=x.device)
    shapes = [torch.empty_like(shape) for _ in range(world_size)]
    dist.all_gather(shapes, shape, group=group)
    buffers = [torch.empty(s.tolist(), dtype=x.dtype, device=x.device) for s in shapes]
    if len({tuple(b.shape) for b in buffers}) > 1 and dist.get_backend(group) == "gloo":
        # gloo's list all_gather needs equal shapes (NCCL does not): send each shard flattened through one
        # variable-split all_to_all_single instead (every rank sends its whole shard to every rank: same bytes).
        sizes = [b.numel() for b in buffers]
        received = torch.empty(sum(sizes), dtype=x.dtype, device=x.device)
        dist.all_to_all_single(received, x.reshape(-1).repeat(world_size), sizes, [x.numel()] * world_size, group=group)
        for buffer, piece in zip(buffers, received.split(sizes), strict=False):
            buffer.copy_(piece.view(buffer.shape))
    else:
        dist.all_gather(buffers, x, group=group)
    return torch.cat(buffers, dim=gather_dim)


PROBLEM = Problem(id=35, make_inputs=make_inputs, solution=solution)
