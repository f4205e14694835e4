"""Warm spares (evaluator/process/warm.py): groups started before their job judge exactly as cold ones, on a CPU gloo
world."""

import os
import pathlib
import signal
import time

import pytest

from evaluator import judge
from evaluator.contract import schema
from evaluator.process import warm

CANDIDATES = pathlib.Path(__file__).parent / "candidates"
SMALL = dict(M=64, N=32, trials=2, seed=5, timing_budget_ms=40)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"


def _pids(spare) -> list[int]:
    return [r.proc.pid for g in (spare.ref, spare.cand) for r in g.ranks]


def _stopped(spare) -> bool:
    """The reference spare's ranks stopped by SIGSTOP; the candidate spare's whole box frozen where it has one (its
    processes then sleep in the freezer rather than show the stopped state), else its ranks stopped too."""
    box = spare.cand.sandbox.cgroup if spare.cand.sandbox is not None else None
    groups = (spare.ref,) if box is not None else (spare.ref, spare.cand)
    return (box is None or box.frozen()) and all(_state(r.proc.pid) in ("T", "t") for g in groups for r in g.ranks)


class CountingPool(warm.WarmPool):
    """Counts the holds, and checks at each that every spare process is really stopped."""

    holds = 0
    all_stopped = True

    def hold(self):
        super().hold()
        self.holds += 1
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not all(_stopped(s) for s in self.spares):
            time.sleep(0.01)
        self.all_stopped &= all(_stopped(s) for s in self.spares)


@pytest.fixture
def pool():
    with CountingPool(2, "cpu", depth=1) as p:
        yield p


def test_a_warm_job_judges_the_candidate_at_its_own_shape_and_stops_spares_while_timing(pool):
    result = judge.evaluate(1, str(CANDIDATES / "allreduce_correct.py"), 2, "cpu", pool=pool, **SMALL)
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert result["environment"]["warm_start"] is True and pool.taken == 1
    # The job's shape, not the spare's placeholder (M = N = 1): the problem's output is (M, N) on every rank.
    assert all(t["output_shapes"] == [[64, 32], "bfloat16"] for t in result["trials"])
    assert len(pool.spares) == 1  # its replacement was started at once
    cfg = judge.Config(world_size=2)
    assert pool.holds == 2 * cfg.blocks and pool.all_stopped  # every timed block, either side, spares stopped
    assert all(_state(p) not in ("T", "t") for p in _pids(pool.spares[0]))  # and resumed after
    assert not (pool.spares[0].cand.sandbox.cgroup and pool.spares[0].cand.sandbox.cgroup.frozen())


def test_a_warm_spare_runs_the_candidate_not_the_reference(pool):
    wrong = judge.evaluate(1, str(CANDIDATES / "allreduce_wrong.py"), 2, "cpu", pool=pool, **SMALL)
    assert wrong["verdict"] == schema.INCORRECT and wrong["environment"]["warm_start"] is True
    broken = judge.evaluate(1, str(CANDIDATES / "allreduce_import_error.py"), 2, "cpu", pool=pool, **SMALL)
    assert broken["verdict"] == schema.COMPILE_ERROR and broken["environment"]["warm_start"] is True
    assert pool.taken == 2


def test_a_job_the_pool_does_not_fit_starts_cold(pool):
    result = judge.evaluate(1, "reference", 1, "cpu", pool=pool, **SMALL)
    assert result["verdict"] == schema.CORRECT and result["environment"]["warm_start"] is False
    assert (pool.taken, pool.cold) == (0, 1)


def test_a_dead_spare_is_never_handed_out(pool):
    dead = pool.spares[0]
    os.killpg(dead.ref.ranks[0].proc.pid, signal.SIGKILL)
    dead.ref.ranks[0].proc.wait(10)
    result = judge.evaluate(2, "reference", 2, "cpu", pool=pool, **SMALL)
    assert result["verdict"] == schema.CORRECT and result["environment"]["warm_start"] is False
    assert pool.cold == 1 and all(_state(p) in ("gone", "Z") for p in _pids(dead))
    assert not os.path.exists(dead.workdir)


def test_closing_the_pool_leaves_no_process_or_directory():
    pool = warm.WarmPool(2, "cpu", depth=2)
    spares = list(pool.spares)
    pool.close()
    assert not pool.spares and pool.take(judge.Config(world_size=2)) is None
    for spare in spares:
        assert all(_state(p) in ("gone", "Z") for p in _pids(spare))
        assert not os.path.exists(spare.workdir)
