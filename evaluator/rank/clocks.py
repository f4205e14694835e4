"""The rank harness's clocks and synchronisation, and the two timers of a timed call.

Bound when the harness starts, before the candidate's module is imported, so that patching time.perf_counter,
torch.cuda.Event, torch.cuda.synchronize or torch.distributed in the candidate's module does not change what the
harness calls. (A candidate can still patch these names here: nothing in a candidate's process is trusted; the judge
cross-checks every block against its own clock.)
"""

from __future__ import annotations

import os
import time

import torch
import torch.distributed as dist

_perf_counter = time.perf_counter
_CudaEvent = torch.cuda.Event
_elapsed_time = torch.cuda.Event.elapsed_time
_record = torch.cuda.Event.record
_cuda_synchronize = torch.cuda.synchronize
_barrier = dist.barrier
_all_reduce = dist.all_reduce
_urandom = os.urandom
_cuda_sleep = torch.cuda._sleep
_query = torch.cuda.Event.query
_empty_cache = torch.cuda.empty_cache
_memory_reserved = torch.cuda.memory_reserved


def synchronize(device: str) -> None:
    if device == "cuda":
        for index in range(torch.cuda.device_count()):
            _cuda_synchronize(index)


def randbelow(n: int) -> int:
    """Uniform in [0, n) from the OS (not from torch or random, whose state the candidate could read or set)."""
    return int.from_bytes(_urandom(8), "little") % n


_CYCLES_PER_US: list[float] = []


def cycles_per_us() -> float:
    """The GPU clock as seen by torch.cuda._sleep, measured once per process, after ~1 ms of spinning: a clock
    still rising when measured reads low, and every spin then lasts less time than the judge asked for."""
    if not _CYCLES_PER_US:
        torch.cuda._sleep(2_000_000)
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        torch.cuda._sleep(4_000_000)
        end.record()
        torch.cuda.synchronize()
        _CYCLES_PER_US.append(4_000_000 / max(1.0, begin.elapsed_time(end) * 1e3))
    return _CYCLES_PER_US[0]


class EventTimer:
    """CUDA events around a call: the device's time from start to stop."""

    def start(self):
        self.begin = _CudaEvent(enable_timing=True)
        self.end = _CudaEvent(enable_timing=True)
        _record(self.begin)

    def stop(self):
        _record(self.end)

    def elapsed_ms(self) -> float:
        return _elapsed_time(self.begin, self.end)


class WallTimer:
    """The host's clock around a call (CPU, where the call is done when it returns)."""

    def start(self):
        self.begin = _perf_counter()

    def stop(self):
        self.finish = _perf_counter()

    def elapsed_ms(self) -> float:
        return (self.finish - self.begin) * 1e3
