"""Collectives on device tensors over a gloo process group, staged through host memory: the shared-device world's
torch.distributed (evaluator/rank/shared_device.py), where every rank shares one GPU and NCCL cannot run.

Gloo moves CUDA tensors for a few collectives only, and none of the point-to-point forms. Staged, every form below
works on any device with NCCL's result: the tensors the call reads are copied to host memory (same shapes and
strides, so gloo's and gloo_compat's own checks still name real mistakes such as a wrong element count or a
non-contiguous tensor), the call runs on gloo (through gloo_compat.py for the NCCL forms gloo lacks), and the tensors
it writes are copied back. Collectives asked for with ``async_op=True`` complete before they return (a handle that is
already done); ``isend``/``irecv`` stay asynchronous, and a received tensor is copied back when its handle is waited
on (or seen completed), as NCCL's is only valid then.

Correctness only: the copies cost time that nothing here measures (shared worlds are never timed). The logic is the
same for CPU tensors, which is how tests/evaluator/test_gloo_compat.py checks every form (``stage_host``).
"""

from __future__ import annotations

import collections
import functools
import inspect

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d as c10d

from evaluator.rank.work_handles import Done

# Each form: the parameters it reads or writes that hold tensors (a tensor or a list of them), and those it writes.
STAGED = {
    "all_reduce": (("tensor",), ("tensor",)),
    "broadcast": (("tensor",), ("tensor",)),
    "reduce": (("tensor",), ("tensor",)),  # written on the destination only (see _writes)
    "all_gather": (("tensor_list", "tensor"), ("tensor_list",)),
    "all_gather_into_tensor": (("output_tensor", "input_tensor"), ("output_tensor",)),
    "all_gather_single": (("output_tensor", "input_tensor"), ("output_tensor",)),  # torch >= 2.13's names
    "reduce_scatter_single": (("output", "input"), ("output",)),
    "reduce_scatter": (("output", "input_list"), ("output",)),
    "reduce_scatter_tensor": (("output", "input"), ("output",)),
    "all_to_all_single": (("output", "input"), ("output",)),
    "all_to_all": (("output_tensor_list", "input_tensor_list"), ("output_tensor_list",)),
    "gather": (("tensor", "gather_list"), ("gather_list",)),
    "scatter": (("tensor", "scatter_list"), ("tensor",)),
    "send": (("tensor",), ()),
    "recv": (("tensor",), ("tensor",)),
    "isend": (("tensor",), ()),
    "irecv": (("tensor",), ("tensor",)),
}
ASYNC_FORMS = ("isend", "irecv")
CALLS: collections.Counter = collections.Counter()  # staged calls by form (what the tests check ran staged)
_STATE = {"installed": False, "stage_host": False}


class _Pending:
    """An ``isend``/``irecv`` in flight on host copies: the received bytes are copied back into the caller's tensor
    once gloo's handle completes (``wait``, or ``is_completed`` seen true); the host copy lives as long as this."""

    def __init__(self, work, back: list):
        self._work, self._back = work, back

    def _finish(self) -> None:
        for dst, host in self._back:
            dst.copy_(host)
        self._back = []

    def wait(self, timeout=None) -> bool:
        done = self._work.wait() if timeout is None else self._work.wait(timeout)
        self._finish()
        return done

    def is_completed(self) -> bool:
        done = self._work.is_completed()
        if done:
            self._finish()
        return done

    def __getattr__(self, name):  # is_success, exception, source_rank, ...: gloo's handle answers
        return getattr(self._work, name)


def installed() -> bool:
    return _STATE["installed"]


def _tensors(value) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for t in value if isinstance(t, torch.Tensor)]
    return []


def _needs_staging(values) -> bool:
    return any(_STATE["stage_host"] or t.device.type != "cpu" for v in values for t in _tensors(v))


def _on_gloo(group) -> bool:
    try:
        return dist.get_backend(group) == "gloo"
    except (RuntimeError, ValueError):  # not a member, not initialised: torch's own call reports it
        return False


def _host(value):
    """A host copy of a tensor or of a list of tensors (same shapes and strides), or the value unchanged."""
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, (list, tuple)):
        return type(value)(_host(v) for v in value)
    return value


def _pairs(original, host) -> list:
    """(caller's tensor, its host copy) for every tensor of a parameter's value."""
    if isinstance(original, torch.Tensor):
        return [(original, host)]
    if isinstance(original, (list, tuple)):
        return [(o, h) for o, h in zip(original, host, strict=False) if isinstance(o, torch.Tensor)]
    return []


def _writes(name: str, bound: inspect.BoundArguments) -> bool:
    """Whether this rank's call writes its tensors: always, but for ``reduce`` only on the destination (NCCL leaves
    a non-destination's tensor as it was)."""
    if name != "reduce":
        return True
    args = bound.arguments
    group, group_dst = args.get("group"), args.get("group_dst")
    if group_dst is not None:
        return dist.get_rank(group) == group_dst
    return dist.get_rank() == args.get("dst")


def _staged(name: str, original):
    signature = inspect.signature(original)
    reads, writes = STAGED[name]

    @functools.wraps(original)
    def call(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return original(*args, **kwargs)  # torch's own message for a wrong call
        params = bound.arguments
        if not (_on_gloo(params.get("group")) and _needs_staging(params.get(p) for p in reads)):
            return original(*args, **kwargs)
        CALLS[name] += 1
        callers = {p: params[p] for p in reads if p in params}
        hosts = {p: _host(value) for p, value in callers.items()}
        back = [pair for p in writes if p in hosts for pair in _pairs(callers[p], hosts[p])]
        wanted_async = bool(params.get("async_op"))
        params.update(hosts)
        if "async_op" in signature.parameters:
            params["async_op"] = False
        outcome = original(*bound.args, **bound.kwargs)
        if name in ASYNC_FORMS:
            return _Pending(outcome, back)
        if _writes(name, bound):
            for dst, host in back:
                dst.copy_(host)
        return Done() if wanted_async else outcome

    return call


def batch_isend_irecv(original, p2p_op_list):
    """Each op through the staged ``isend``/``irecv`` (gloo does not coalesce: torch's own loop does the same)."""
    ops = list(p2p_op_list)
    if not ops or not _on_gloo(ops[0].group) or not _needs_staging(op.tensor for op in ops):
        return original(ops)
    CALLS["batch_isend_irecv"] += 1
    works = []
    for op in ops:
        sending = getattr(op.op, "__name__", "") == "isend"
        peer = {"group_dst" if sending else "group_src": op.group_peer}
        form = c10d.isend if sending else c10d.irecv
        works.append(form(op.tensor, group=op.group, tag=op.tag, **peer))
    return works


def install(stage_host: bool = False) -> list[str]:
    """Stage every form above (and batch_isend_irecv) in this process, torch.distributed and its c10d module alike;
    after gloo_compat's own adapters, which the staged calls then run on host tensors. Returns the names patched."""
    _STATE["stage_host"] = stage_host
    names = [name for name in STAGED if hasattr(c10d, name)] + ["batch_isend_irecv"]
    if _STATE["installed"]:
        return names
    for name in names[:-1]:
        wrapped = _staged(name, getattr(c10d, name))
        setattr(c10d, name, wrapped)
        setattr(dist, name, wrapped)
    original = c10d.batch_isend_irecv

    @functools.wraps(original)
    def batch(p2p_op_list):
        return batch_isend_irecv(original, p2p_op_list)

    c10d.batch_isend_irecv = dist.batch_isend_irecv = batch
    _STATE["installed"] = True
    return names
