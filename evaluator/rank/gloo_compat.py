"""NCCL's collective forms on gloo: the CPU profile's ranks run what a candidate written for NCCL calls.

The problems' pages name NCCL forms that torch's gloo backend refuses (probed on torch 2.13, 2 and 3 ranks; the test
tests/evaluator/test_gloo_compat.py runs every form below on both sizes, with and without this adapter):

- ``all_gather_into_tensor`` into any output of W x the input's elements but not the flat (W*M, ...) shape, e.g. the
  stacked (W, M, N) output of problem 2, or (W,) from 0-d inputs: gloo says "invalid tensor size";
- ``reduce_scatter_tensor`` from a stacked (W, M, N) input: gloo fails its shape check;
- list ``all_gather`` with chunks of different shapes (gloo wants one shape for all);
- list ``all_to_all`` of any shapes: gloo wants one shape for all in torch 2.13 and has no ``alltoall`` at all in
  torch 2.11 (the GPU hosts' torch: "Backend gloo does not support alltoall");
- ``reduce``: gloo uses the non-destination ranks' tensors as scratch (they change); NCCL leaves them as they were.

Each of these is rewritten into a form gloo runs with NCCL's result: the same bytes, flattened to 1-D for the
tensor collectives, one ``all_to_all_single`` with split sizes for the uneven list forms, a clone on non-destination
ranks for ``reduce``; every list ``all_to_all`` goes through ``all_to_all_single``, even shapes too, since one
torch version has no other form on gloo. Everything else (even shapes, the flat forms, every call on another
backend) goes to torch unchanged, so torch's own errors still name real mistakes (a wrong element count stays an error
here as on NCCL).

Only the CPU profile's rank processes install this (evaluator/rank/worker.py, after the gloo process group exists);
NCCL ranks never do. A candidate may undo the patch in its own process; it then gets gloo's refusals, nothing more.
Forms still out of reach on the CPU profile are CUDA-only by nature (symmetric memory, NVSHMEM, custom CUDA or Triton
kernels, CUDA streams and events): docs/cpu-profile.md lists them.
"""

from __future__ import annotations

import functools

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d as c10d

from evaluator.rank.work_handles import Done

_INSTALLED = "_pkb_gloo_compat"


def _on_gloo(group) -> bool:
    try:
        return dist.get_backend(group) == "gloo"
    except (RuntimeError, ValueError):  # not a member, not initialised: torch's own call reports it
        return False


def _world(group) -> int:
    return dist.get_world_size(group)


def _flat(tensor: torch.Tensor) -> torch.Tensor | None:
    """A 1-D view of the same memory, or None when there is none (non-contiguous: NCCL refuses those too)."""
    return tensor.view(-1) if tensor.is_contiguous() else None


def all_gather_into_tensor(original, output_tensor, input_tensor, group=None, async_op=False):
    if _on_gloo(group) and isinstance(output_tensor, torch.Tensor) and isinstance(input_tensor, torch.Tensor):
        W = _world(group)
        flat_shape = (W * input_tensor.shape[0], *input_tensor.shape[1:]) if input_tensor.dim() else None
        if (
            output_tensor.numel() == W * input_tensor.numel()
            and tuple(output_tensor.shape) != flat_shape
            and _flat(output_tensor) is not None
        ):
            return original(_flat(output_tensor), input_tensor.contiguous().view(-1), group=group, async_op=async_op)
    return original(output_tensor, input_tensor, group=group, async_op=async_op)


def reduce_scatter_tensor(original, output, input, op=dist.ReduceOp.SUM, group=None, async_op=False):
    if _on_gloo(group) and isinstance(output, torch.Tensor) and isinstance(input, torch.Tensor):
        W = _world(group)
        flat_shape = (W * output.shape[0], *output.shape[1:]) if output.dim() else None
        if input.numel() == W * output.numel() and tuple(input.shape) != flat_shape and _flat(output) is not None:
            return original(_flat(output), input.contiguous().view(-1), op=op, group=group, async_op=async_op)
    return original(output, input, op=op, group=group, async_op=async_op)


def _uneven(tensors) -> bool:
    return len({tuple(t.shape) for t in tensors}) > 1


def _exchange(outputs: list, inputs: list, group) -> None:
    """``outputs[i]`` receives what rank i sent this rank (``inputs[j]`` goes to rank j), any shapes, one dtype:
    one all_to_all_single over the flattened chunks with split sizes in elements."""
    dtype = inputs[0].dtype
    send = torch.cat([t.reshape(-1) for t in inputs]) if inputs else torch.empty(0, dtype=dtype)
    recv = torch.empty(sum(t.numel() for t in outputs), dtype=dtype, device=send.device)
    c10d.all_to_all_single(recv, send, [t.numel() for t in outputs], [t.numel() for t in inputs], group=group)
    offset = 0
    for out in outputs:
        out.copy_(recv[offset : offset + out.numel()].view(out.shape))
        offset += out.numel()


def all_to_all(original, output_tensor_list, input_tensor_list, group=None, async_op=False):
    if (
        _on_gloo(group)
        and len({t.dtype for t in list(output_tensor_list) + list(input_tensor_list)}) == 1
        and len(output_tensor_list) == len(input_tensor_list) == _world(group)
    ):
        _exchange(list(output_tensor_list), list(input_tensor_list), group)
        return Done() if async_op else None
    return original(output_tensor_list, input_tensor_list, group=group, async_op=async_op)


def all_gather(original, tensor_list, tensor, group=None, async_op=False):
    if (
        _on_gloo(group)
        and isinstance(tensor, torch.Tensor)
        and _uneven(list(tensor_list) + [tensor])
        and all(t.dtype == tensor.dtype for t in tensor_list)
        and len(tensor_list) == _world(group)
    ):
        _exchange(list(tensor_list), [tensor] * len(tensor_list), group)
        return Done() if async_op else None
    return original(tensor_list, tensor, group=group, async_op=async_op)


def reduce(original, tensor, dst=None, op=dist.ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    kwargs = dict(op=op, group=group, async_op=async_op)
    if group_dst is not None:
        kwargs["group_dst"] = group_dst
    if dst is not None:
        kwargs["dst"] = dst
    if _on_gloo(group) and isinstance(tensor, torch.Tensor):
        me = dist.get_rank(group) if group_dst is not None else dist.get_rank()
        target = group_dst if group_dst is not None else dst
        if target is not None and me != target:
            return original(tensor.clone(), **kwargs)  # NCCL reads a non-destination's tensor and leaves it as it was
    return original(tensor, **kwargs)


ADAPTED = {
    "all_gather_into_tensor": all_gather_into_tensor,
    "reduce_scatter_tensor": reduce_scatter_tensor,
    "all_to_all": all_to_all,
    "all_gather": all_gather,
    "reduce": reduce,
}
# The names torch 2.13 gives the two tensor forms (the old ones now call these): the same rewrites.
ADAPTED.update(
    {
        name: adapter
        for name, adapter in (
            ("all_gather_single", all_gather_into_tensor),
            ("reduce_scatter_single", reduce_scatter_tensor),
        )
        if hasattr(c10d, name)
    }
)


def _wrap(adapter, original):
    @functools.wraps(original)
    def call(*args, **kwargs):
        return adapter(original, *args, **kwargs)

    return call


def install(stage: bool = False, stage_host: bool = False) -> list[str]:
    """Route the forms above through the adapter in this process (torch.distributed and its c10d module alike);
    idempotent. ``stage``: also every collective and point-to-point form on device tensors through host memory
    (shared-device worlds, evaluator/rank/gloo_staging.py); ``stage_host``: CPU tensors too (its tests). Returns the
    names patched."""
    from evaluator.rank import gloo_staging

    if getattr(dist, _INSTALLED, False):
        return list(ADAPTED) + (list(gloo_staging.STAGED) if gloo_staging.installed() else [])
    names = list(ADAPTED)
    for name, adapter in ADAPTED.items():
        wrapped = _wrap(adapter, getattr(c10d, name))
        setattr(c10d, name, wrapped)
        setattr(dist, name, wrapped)
    if stage or stage_host:
        names += gloo_staging.install(stage_host=stage_host)
    setattr(dist, _INSTALLED, True)
    return names
