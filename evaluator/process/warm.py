"""Warm spares: rank groups started before the job that will use them, so back-to-back jobs do not wait for start-up.

Starting a pair of groups (Python, torch, the CUDA context, the process group) is most of a job's wall time on a GPU
(about 4 s of 5: docs/calibration.md, Throughput), and none of it depends on the job. A :class:`WarmPool` keeps
``depth`` pairs started with the problem left open (``evaluator.rank.worker --problem -``); the judge takes one, gives
it the job's problem, candidate and shape in a ``load`` and judges as usual, and the pool starts a replacement at once.

What stays as it was:
- every job still runs in processes of its own, used once and killed after: a spare has run nothing but the harness
  until its job's ``load``, so candidate code first runs there, as it would at a cold start;
- candidate spares are sandboxed from birth (their own uid and network namespace); spares of reference and candidate
  are separate groups, as always;
- while either side of a job runs a timed block, every spare is stopped (frozen), so warming up the next jobs never
  shares the CPU or the GPU with a measurement; spares warm up during trials, comparisons and the judge's own work.

Only jobs whose world size, device and sandbox setting match the pool's use it; any other job, and any retry after an
infrastructure failure, starts cold.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import tempfile

from evaluator.process import removal
from evaluator.process import sandbox as sandboxing
from evaluator.process.group import GroupShape, RankGroup, close_all
from evaluator.process.protocol import DEFERRED


@dataclasses.dataclass
class Spare:
    workdir: str
    ref: RankGroup
    cand: RankGroup

    def alive(self) -> bool:
        return all(r.proc.poll() is None for g in (self.ref, self.cand) for r in g.ranks)


def make_workdir() -> str:
    workdir = tempfile.mkdtemp(prefix="pkb-judge-")
    # Traversable (not listable) so that a sandboxed candidate reaches its own directory; the reference's directory
    # inside stays root-only (RankGroup), so its outputs are never readable by the candidate.
    os.chmod(workdir, 0o711)
    return workdir


class WarmPool:
    def __init__(self, world_size: int, device: str, depth: int = 2, sandbox: bool | None = None):
        if depth < 1:
            raise ValueError("a warm pool needs a depth of at least 1")
        self.world_size, self.device, self.depth = world_size, device, depth
        self.sandbox = sandboxing.enabled_by_default() if sandbox is None else sandbox
        self.spares: collections.deque = collections.deque()
        self.taken = self.cold = 0
        self.closed = False
        self._fill()

    def matches(self, cfg) -> bool:
        return (
            not self.closed
            and cfg.world_size == self.world_size
            and cfg.device == self.device
            and cfg.sandbox == self.sandbox
        )

    def take(self, cfg) -> Spare | None:
        """A started pair for this job (its replacement starts now), or None: the job starts cold."""
        if not self.matches(cfg):
            self.cold += 1
            return None
        spare = None
        while self.spares and spare is None:
            candidate = self.spares.popleft()
            if getattr(cfg, "sandbox_required", False) and not candidate.cand.sandbox.complete:
                _discard(candidate)  # the cold start then fails closed, naming what the sandbox lacks
                break
            if candidate.alive():
                spare = candidate
            else:  # died while waiting (killed from outside, out of memory): never hand out a broken pair
                # Killed at once: its other ranks wait on the dead one's rendezvous and would never heed an exit,
                # so a polite close would hold this job's start for the whole close timeout.
                _discard(candidate, timeout=0.0)
        self._fill()
        if spare is None:
            self.cold += 1
        else:
            self.taken += 1
        return spare

    def hold(self) -> None:
        """Stop every spare while a timed block runs (see the module docstring): a candidate spare's whole box
        through its freezer, a reference spare's process groups with SIGSTOP."""
        for spare in self.spares:
            spare.ref.pause()
            spare.cand.pause()

    def release(self) -> None:
        for spare in self.spares:
            spare.cand.resume()
            spare.ref.resume()

    def close(self) -> None:
        self.closed = True
        while self.spares:
            _discard(self.spares.popleft())

    def __enter__(self) -> WarmPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _fill(self) -> None:
        while not self.closed and len(self.spares) < self.depth:
            self.spares.append(self._start())

    def _start(self) -> Spare:
        workdir = make_workdir()
        # The shape given here is a placeholder: the job's own arrives with its load.
        common = GroupShape(
            world_size=self.world_size, device=self.device, problem=DEFERRED, M=1, N=1, dtype="bfloat16", reduced=False
        )
        ref = cand = None
        try:
            ref = RankGroup("ref", candidate="reference", workdir=os.path.join(workdir, "ref"), trusted=True, **common)
            cand = RankGroup(
                "cand",
                candidate=DEFERRED,
                workdir=os.path.join(workdir, "cand"),
                trusted=False,
                isolate=self.sandbox,
                **common,
            )
        except BaseException:
            close_all([cand, ref])
            removal.remove_tree(workdir)
            raise
        return Spare(workdir, ref, cand)


def _discard(spare: Spare, timeout: float = 10.0) -> None:
    close_all([spare.cand, spare.ref], timeout)
    removal.remove_tree(spare.workdir)  # a spare's candidate ranks may have run candidate code
