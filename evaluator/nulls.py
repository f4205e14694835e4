"""Null candidates that every problem's check must reject (``pkb selfcheck`` judges them):

- ``zeros``: the reference's output structure filled with zeros;
- ``inputs``: the timed input returned unchanged;
- ``nocomm``: the reference run with every collective replaced by its local-only version (all-reduce keeps the
  rank's own contribution, all-gather replicates it, all-to-all keeps only the chunk a rank sends to itself, in
  place, and zeros the chunks other ranks would send, except that an all-to-all sending back what one delivered
  returns what the rank sent, receives leave buffers untouched...), i.e. the rank's local result without
  communication. Object collectives (``all_gather_object``) stay real: references use them for
  metadata only (tile shapes, block lengths), and a local-only run that cannot even size its buffers consistently
  crashes (problem 78) instead of giving the wrong answer this null exists to show.

These are trusted helpers for the self-check, not candidates: they live in the judge's package.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable

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


def _split_rows(tensor: torch.Tensor, sizes, world_size: int) -> tuple[list[int], list[int]]:
    """Offsets and counts, in rows (dim 0), of the W chunks of an all_to_all_single buffer: the given split sizes, or
    W equal parts when there are none (torch's rule)."""
    if sizes is not None and len(sizes):
        counts = [int(x) for x in sizes]
    else:
        counts = [tensor.shape[0] // world_size] * world_size
    return [sum(counts[:i]) for i in range(len(counts))], counts


def _own_chunk_only(output, input, output_split_sizes, input_split_sizes, rank: int, world_size: int) -> None:
    """all_to_all_single without communication: the chunk this rank sends to itself lands where the collective would
    put it (output chunk ``rank``, placed by ``output_split_sizes``); every chunk that would come from another rank
    is zero. Never fails on uneven splits: the output keeps the size its caller allocated from the split sizes."""
    out_offsets, out_counts = _split_rows(output, output_split_sizes, world_size)
    in_offsets, in_counts = _split_rows(input, input_split_sizes, world_size)
    own = None
    if rank < len(in_counts) and in_counts[rank] > 0:
        own = input.narrow(0, in_offsets[rank], in_counts[rank]).clone()  # before zeroing: output may alias input
    output.zero_()
    if own is None or rank >= len(out_counts) or out_counts[rank] <= 0:
        return
    target = output.narrow(0, out_offsets[rank], out_counts[rank])
    if target.numel() == own.numel():
        target.copy_(own.reshape(target.shape))
    elif target.is_contiguous():  # split sizes that disagree with themselves (never from a real collective)
        n = min(target.numel(), own.numel())
        target.view(-1)[:n].copy_(own.reshape(-1)[:n])


# Outputs of the all_to_all_single stand-in up to this size are remembered for the round-trip rule (counts and other
# metadata; the copies live only for one local-only call of the reference).
ROUND_TRIP_MAX_NUMEL = 1 << 16


def _round_trip(exchanges: list, output, input, output_counts: list[int], input_counts: list[int]):
    """The real all-to-all is its own inverse: sending back what an all-to-all delivered (with the split sizes
    swapped) returns to every rank what it sent in the first place, which this rank knows without communicating (a
    requester learning how many of its requests were answered, problem 64). Returns that, or None."""
    for ref, delivered, sent, delivered_counts, sent_counts in reversed(exchanges):
        if (
            ref() is input
            and output_counts == sent_counts
            and input_counts == delivered_counts
            and output.shape == sent.shape
            and torch.equal(input, delivered)
        ):
            return sent
    return None


def _local_collectives() -> dict[str, Callable]:
    exchanges: list = []  # (weakref to an all_to_all_single output, its copy, a copy of its input, split rows)

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
        W = _size(group)
        output_counts = _split_rows(output, output_split_sizes, W)[1]
        input_counts = _split_rows(input, input_split_sizes, W)[1]
        back = _round_trip(exchanges, output, input, output_counts, input_counts)
        sent = input.clone() if max(output.numel(), input.numel()) <= ROUND_TRIP_MAX_NUMEL else None
        if back is not None:
            output.copy_(back)
        else:
            _own_chunk_only(output, input, output_split_sizes, input_split_sizes, _rank(group), W)
        if sent is not None:
            exchanges.append((weakref.ref(output), output.clone(), sent, output_counts, input_counts))
        return _async(k)

    def all_to_all(output_tensor_list, input_tensor_list, group=None, **k):
        rank = _rank(group)
        own = input_tensor_list[rank].clone() if rank < len(input_tensor_list) else None
        for source, out in enumerate(output_tensor_list):
            if source == rank and own is not None and out.numel() == own.numel():
                out.copy_(own.reshape(out.shape))
            else:
                out.zero_()  # would have come from another rank
        return _async(k)

    def gather(tensor, gather_list=None, dst=0, group=None, **k):
        for out in gather_list or []:
            out.copy_(tensor)
        return _async(k)

    def scatter(tensor, scatter_list=None, src=0, group=None, **k):
        if scatter_list:
            tensor.copy_(scatter_list[_rank(group)])
        return _async(k)

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
        "all_reduce": all_reduce,
        "broadcast": broadcast,
        "reduce": reduce,
        "all_gather": all_gather,
        "all_gather_into_tensor": all_gather_into_tensor,
        "_all_gather_base": all_gather_into_tensor,
        "reduce_scatter_tensor": reduce_scatter_tensor,
        "_reduce_scatter_base": reduce_scatter_tensor,
        "reduce_scatter": reduce_scatter,
        "all_to_all_single": all_to_all_single,
        "all_to_all": all_to_all,
        "gather": gather,
        "scatter": scatter,
        "send": point_to_point,
        "recv": point_to_point,
        "isend": point_to_point,
        "irecv": point_to_point,
        "batch_isend_irecv": batch_isend_irecv,
        "P2POp": P2POp,
        "barrier": barrier,
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
