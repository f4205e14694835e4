"""The timed loop of one timing block, inside a rank process, shaped like Triton's ``do_bench``: ``time_block``.

Warm-up calls first (untimed; the host's time to enqueue one call measured), then for each timed call: flush the L2
cache, meet the other ranks at a barrier, synchronize, spin the GPU while the host queues the call, record the start
event, call, record the end event, synchronize, read the events. The judge's own clock around the whole block (its
wall) is what every number here is cross-checked against (evaluator/timing/rules.py): a candidate's rank may lie.

Each call gets an input set of its own, built from the block's seed (fresh per block, chosen by the judge), so no two
calls in a job see the same inputs: a cache keyed by pointer, id or content never hits (``InputSets``).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable
from typing import Any, cast

from evaluator.rank import outputs
from evaluator.rank.clocks import (
    EventTimer,
    WallTimer,
    _barrier,
    _cuda_sleep,
    _perf_counter,
    _query,
    cycles_per_us,
    randbelow,
    synchronize,
)
from evaluator.timing.calibration import SPIN_HOST_FACTOR, SPIN_MARGIN_US, SPIN_MAX_US
from problems.base import derive_seed

# Bytes of distinct input sets kept at once in one timing block (per rank); beyond that, sets are rebuilt after use.
POOL_BYTES = {"cuda": 8 * 2**30, "cpu": 256 * 2**20}


def timing_set_seed(block_seed: int, index: int) -> int:
    """The seed of the ``index``-th input set of a timing block: every call in a block gets its own inputs."""
    return derive_seed(block_seed, "timing-set", index) & ((1 << 62) - 1)


def spin_wish_us(host_us: list[float]) -> float:
    """The spin a rank asks for ahead of each timed call: a margin over its host time to enqueue one call, the median
    of the warm-up calls measured (see time_block), so that one slow call (allocator growth, a garbage collection)
    moves it little."""
    typical = statistics.median(host_us) if host_us else 0.0
    return min(SPIN_MAX_US, SPIN_HOST_FACTOR * typical + SPIN_MARGIN_US)


class InputSets:
    """A block's input sets, one per call (``build(k)`` makes the k-th): as many as fit in ``pool_bytes`` are built up
    front, one alone when a set is huge; beyond that each set is rebuilt right after its call, for a call that comes
    later (outside any timed window)."""

    def __init__(self, build: Callable[[int], list], calls: int, pool_bytes: int):
        first = build(0)
        self.slots = max(1, min(calls, pool_bytes // max(1, outputs.nbytes(first))))
        # Input sets (argument lists); done() leaves a slot None for a moment, between dropping a set and its rebuild.
        self.pool: list[Any] = [first] + [build(k) for k in range(1, min(self.slots, calls))]
        del first  # the pool holds it: with one slot it must go when its call is done
        self.build, self.calls = build, calls

    def __getitem__(self, call: int) -> list:
        return self.pool[call % self.slots]

    def done(self, call: int) -> None:
        """The set of ``call`` is used (the caller holds no reference to it): rebuild its slot for a later call."""
        if call + self.slots < self.calls:
            self.pool[call % self.slots] = None
            self.pool[call % self.slots] = self.build(call + self.slots)


class BadOutput(Exception):
    """A timed call returned something other than plain tensors (the verdict ``incorrect``)."""


@dataclasses.dataclass
class Block:
    samples: list  # ms per timed call: CUDA events, or the host's clock on CPU
    host_paced: int  # timed calls whose pace the host set
    spin_short: int  # timed calls whose start event the GPU passed before the host was done queueing the call
    spin_us: float  # the spin ahead of each timed call
    wanted_us: float  # the spin this rank asked for (spin_wish_us)
    kept: object = None  # a copy of one timed call's output, drawn uniformly (reservoir sampling), or None
    kept_call: int | None = None


def time_block(
    solution,
    sets: InputSets,
    warmup: int,
    iters: int,
    device_kind: str,
    flush,
    asked_spin_us,
    spin_exact: bool,
    keep: bool,
    host_us: list[float],
) -> Block:
    """``warmup`` untimed calls then ``iters`` timed ones, call i on ``sets[i]``. ``flush``: a buffer the size of
    twice the L2 cache, zeroed before each timed call (CUDA; None on CPU). ``asked_spin_us``: the judge's spin;
    ``spin_exact``: take it as it is (blocks 1+) rather than lengthen it to this rank's own wish (block 0).
    ``keep``: after each timed call, and only then, decide from the OS's randomness whether to keep a copy of that
    output (one timed call per block, uniformly), for the judge to check against the reference on the same inputs.
    ``host_us``: the host times of warm-up calls so far (this rank's, across blocks), appended to."""
    cuda = device_kind == "cuda"
    timer = EventTimer() if cuda else WallTimer()
    # The same timer, read only where cuda, which made it an EventTimer.
    events = cast(EventTimer, timer)
    inputs: list | None
    spin_us, spin_cycles, wanted_us = 0.0, 0, 0.0
    for i in range(warmup):
        # The host time to enqueue a call, as a timed call meets it: with the device idle (without this sync a
        # warm-up call also waited for the launch queue to drain behind the block's input building) and after a call
        # of the block (the first call after building the block's inputs is slower: allocator, caches). Blocks 1+
        # have one warm-up call, so only block 0's calls 1+ count and the wish is the same from block 1 on. Counting
        # each block's first call grew the spins from block to block while the calls' medians stayed the same: judge
        # time spent idle and room for work beside the spin (docs/calibration.md, "The host time per call").
        inputs = sets[i]
        synchronize(device_kind)
        began = _perf_counter()
        output = solution(*inputs)
        if i > 0:
            host_us.append((_perf_counter() - began) * 1e6)
        if i == warmup - 1:
            synchronize(device_kind)
            if cuda:
                wanted_us = spin_wish_us(host_us)
                # The judge sets one spin for both sides from block 1 on (from the ranks' ``spin_wanted_us``, see
                # evaluator/judge/schedule.py), so it cancels in the judge's cross-check of wall clocks; spins each
                # process set for itself differed between the sides (docs/calibration.md, spin_exact).
                spin_us = min(SPIN_MAX_US, float(asked_spin_us)) if spin_exact else max(asked_spin_us, wanted_us)
                spin_cycles = int(spin_us * cycles_per_us())
        del output
        inputs = None  # with one slot, the set just used must be gone before the next is built
        sets.done(i)
    samples: list[float] = []
    host_paced = spin_short = 0
    kept, kept_call = None, None
    for i in range(warmup, warmup + iters):
        inputs = sets[i]
        if flush is not None:
            flush.zero_()  # the L2 cache flushed
        _barrier()
        synchronize(device_kind)
        if spin_cycles:
            # A blocking kernel ahead of the start event (as NVBench does): while the GPU spins, the host queues the
            # call, so the events time the device work rather than this process's launch latency, which differs
            # between processes and would make identical code look faster or slower than itself.
            _cuda_sleep(spin_cycles)
        timer.start()
        began = _perf_counter()
        output = solution(*inputs)
        timer.stop()
        if cuda:
            # Host-paced: the GPU had already finished when the host returned (launches slower than the GPU runs
            # them), or the host returned only after the spin was over (it waited on the GPU: a sync inside the
            # call). Either way the events also measure this process's host speed.
            waited_us = (_perf_counter() - began) * 1e6
            if _query(events.end) or (spin_us and waited_us > spin_us):
                host_paced += 1
            # A diagnostic, not a verdict: the spin ran out before the host had queued the whole call, so the GPU
            # may have waited inside the window (a call with a long first kernel is still timed right). It tells a
            # spin shorter in time than asked from slower GPU work, where tiny calls' block medians move with no
            # host-paced call (docs/calibration.md, spin_short).
            elif spin_us and _query(events.begin):
                spin_short += 1
        synchronize(device_kind)
        samples.append(timer.elapsed_ms())
        try:
            outputs.check_plain(output)  # every timed output is of plain types; one is also kept
            if keep and randbelow(i - warmup + 1) == 0:
                # Copied at once (a later call may reuse the buffer, a thread may finish it late), but on the device:
                # a host copy here, of a size the dice decide, would vary this block's wall time.
                kept, kept_call = outputs.snapshot(output), i
                synchronize(device_kind)
        except TypeError as exc:
            raise BadOutput(f"timed call {i}: {exc}") from exc
        del output
        inputs = None
        sets.done(i)
    return Block(samples, host_paced, spin_short, spin_us, wanted_us, kept, kept_call)
