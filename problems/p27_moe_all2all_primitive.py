"""27 moe_all2all_primitive: all-to-all of token rows with per-peer split lists (VeOmni MoE comm helper).

Interface as PKB: ``solution(local_tensor (M, N) D, input_split_sizes: list of W ints, output_split_sizes: list of
W ints, group = None) -> (sum(output_split_sizes), N) D``, rank-specific. One all_to_all_single on WORLD (group
None): rank r sends rows [off_j, off_j + in_j) to rank j and stacks what it receives in rank order. With one rank the
input itself is returned (made contiguous: the very object for a contiguous input). Split tensors, where given, are
read back to the host (a sync).

Decisions (spec Pitfalls):
- Splits are PKB's: M // W rows per peer with the remainder on the last peer. Those lists disagree across ranks when
  M % W != 0 (the collective fails or hangs), so the builder refuses such M with a ValueError. ``allows_world_size``
  can only see W, so it applies the spec's rule "W divides M" at the default M = 1024 (as problem 33 does): W = 3, 6,
  ... are refused up front instead of failing in the builder.
- At W = 1 the answer is the input by definition, so the "input returned unchanged" null answer is correct there;
  for W > 1 it is the no-communication answer and fails, as do zeros.
- Pure data movement: the output matches exactly; the default tolerance is kept.
"""

import torch
import torch.distributed as dist

from problems._moe_routing import as_list, equal_splits, require_equal_splits
from problems.base import InputContext, Problem

DEFAULT_M = 1024


def make_inputs(ctx: InputContext):
    require_equal_splits(ctx.M, ctx.world_size)
    ctx.seed(ctx.rank)
    local_tensor = torch.randn(ctx.M, ctx.N, dtype=ctx.dtype, device=ctx.device)
    input_split_sizes = equal_splits(ctx.M, ctx.world_size)
    output_split_sizes = list(input_split_sizes)
    return local_tensor, input_split_sizes, output_split_sizes, None


def solution(local_tensor: torch.Tensor, input_split_sizes=None, output_split_sizes=None, group=None) -> torch.Tensor:
    if dist.get_world_size(group) == 1:
        return local_tensor.contiguous()
    input_split_sizes = as_list(input_split_sizes)
    output_split_sizes = as_list(output_split_sizes)
    rows = sum(output_split_sizes) if output_split_sizes is not None else local_tensor.shape[0]
    output = local_tensor.new_empty((rows,) + tuple(local_tensor.shape[1:]))
    dist.all_to_all_single(output, local_tensor.contiguous(), output_split_sizes, input_split_sizes, group=group)
    return output


PROBLEM = Problem(
    id=27, make_inputs=make_inputs, solution=solution, allows_world_size=lambda W: W >= 1 and DEFAULT_M % W == 0
)
