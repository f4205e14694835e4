"""Null candidates that every problem's check must reject (``pkb selfcheck`` judges them):

- ``zeros``: the reference's output structure filled with zeros;
- ``inputs``: the timed input returned unchanged;
- ``nocomm``: the reference run with every collective replaced by its local-only version (all-reduce keeps the
  rank's own contribution, all-gather replicates it, receives leave buffers untouched...), i.e. the rank's local
  result without communication.

These are trusted helpers for the self-check, not candidates: they live in the judge's package.
"""
from __future__ import annotations

import contextlib
from typing import Callable

import torch
import torch.distributed as dist


def _zeros_like(value):
    if isinstance(value, torch.Tensor):
        return torch.zeros_like(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_zeros_like(v) for v in value)
    if isinstance(value, dict):
        return {k: _zeros_like(v) for k, v in value.items()}
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return type(value)(0)
    return value


class _Done:
    def wait(self, *args, **kwargs):
        return True

    def is_completed(self):
        return True

    def get_future(self):
        fut = torch.futures.Future()
        fut.set_result(None)
        return fut


def _rank(group=None) -> int:
    return dist.get_rank(group) if group is not None else dist.get_rank()


def _size(group=None) -> int:
    return dist.get_world_size(group) if group is not None else dist.get_world_size()


def _async(kwargs):
    return _Done() if kwargs.get("async_op") else None


def _local_collectives() -> dict[str, Callable]:
    def all_reduce(tensor, *a, **k):
        return _async(k)

    def broadcast(tensor, *a, **k):
        return _async(k)

    def reduce(tensor, *a, **k):
        return _async(k)

    def all_gather(tensor_list, tensor, group=None, **k):
        for out in tensor_list:
            out.copy_(tensor.reshape(out.shape)) if out.numel() == tensor.numel() else None
        return _async(k)

    def all_gather_into_tensor(output, input, group=None, **k):
        output.copy_(input.reshape(-1).repeat(_size(group)).reshape(output.shape))
        return _async(k)

    def reduce_scatter_tensor(output, input, op=None, group=None, **k):
        output.copy_(input.reshape(_size(group), -1)[_rank(group)].reshape(output.shape))
        return _async(k)

    def reduce_scatter(output, input_list, op=None, group=None, **k):
        output.copy_(input_list[_rank(group)])
        return _async(k)

    def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None, **k):
        if output.numel() == input.numel():
            output.copy_(input.reshape(output.shape))
        return _async(k)

    def all_to_all(output_tensor_list, input_tensor_list, group=None, **k):
        for out, inp in zip(output_tensor_list, input_tensor_list):
            if out.numel() == inp.numel():
                out.copy_(inp.reshape(out.shape))
        return _async(k)

    def gather(tensor, gather_list=None, dst=0, group=None, **k):
        for out in gather_list or []:
            out.copy_(tensor)
        return _async(k)

    def scatter(tensor, scatter_list=None, src=0, group=None, **k):
        if scatter_list:
            tensor.copy_(scatter_list[_rank(group)])
        return _async(k)

    def all_gather_object(object_list, obj, group=None):
        for i in range(len(object_list)):
            object_list[i] = obj

    def point_to_point(tensor, *a, **k):
        return _Done()

    def batch_isend_irecv(ops):
        return [_Done() for _ in ops]

    class P2POp:
        """Stands in for dist.P2POp, whose constructor only accepts the real isend/irecv functions."""

        def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
            self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag

    def barrier(*a, **k):
        return _async(k)

    return {
        "all_reduce": all_reduce, "broadcast": broadcast, "reduce": reduce, "all_gather": all_gather,
        "all_gather_into_tensor": all_gather_into_tensor, "_all_gather_base": all_gather_into_tensor,
        "reduce_scatter_tensor": reduce_scatter_tensor, "_reduce_scatter_base": reduce_scatter_tensor,
        "reduce_scatter": reduce_scatter, "all_to_all_single": all_to_all_single, "all_to_all": all_to_all,
        "gather": gather, "scatter": scatter, "all_gather_object": all_gather_object,
        "send": point_to_point, "recv": point_to_point, "isend": point_to_point, "irecv": point_to_point,
        "batch_isend_irecv": batch_isend_irecv, "P2POp": P2POp, "barrier": barrier,
    }


@contextlib.contextmanager
def no_communication():
    saved = {}
    for name, fn in _local_collectives().items():
        if hasattr(dist, name):
            saved[name] = getattr(dist, name)
            setattr(dist, name, fn)
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(dist, name, fn)


def make(kind: str, problem) -> Callable:
    if kind == "zeros":
        return lambda *inputs: _zeros_like(problem.solution(*inputs))
    if kind == "inputs":
        index = problem.timed_arg_index()
        return lambda *inputs: inputs[index]
    if kind == "nocomm":
        def local_only(*inputs):
            with no_communication():
                return problem.solution(*inputs)
        return local_only
    raise ValueError(f"unknown null candidate {kind!r}")
