"""Rules of the timing document and of pausing the idle side (both found by A/A runs on an H200,
docs/calibration.md)."""

import os
import random
import time

import pytest

from evaluator import judge
from evaluator.contract import schema
from evaluator.judge import replies
from evaluator.process.group import RankGroup, close_all
from evaluator.timing import calibration
from evaluator.timing import rules as timing_rules


def _blocks(center: float, n_blocks: int = 6, n: int = 50, seed: int = 1) -> list[list[float]]:
    rng = random.Random(seed)
    return [[center * (1 + rng.gauss(0, 0.005)) for _ in range(n)] for _ in range(n_blocks)]


def _document(ref_ms: float, cand_ms: float, host_bound: dict, reference_spin_short=None) -> dict:
    cfg = judge.Config(world_size=1, device="cuda")
    walls = {"ref": [ref_ms + 0.01] * 6, "cand": [cand_ms + 0.01] * 6}
    return timing_rules._timing_document(
        _blocks(ref_ms),
        _blocks(cand_ms, seed=2),
        walls,
        cfg,
        calls=51,
        host_bound=host_bound,
        reference_spin_short=reference_spin_short,
    )


def test_gpu_paced_timings_use_the_process_floor():
    doc = _document(1.10, 1.0, {"ref": 0.0, "cand": 0.05})
    assert doc["host_bound"] is False and doc["process_noise_floor"] == calibration.PROCESS_NOISE_FLOOR["cuda"]
    assert doc["faster"] is True  # 10% clears the 8.3% floor plus a tight bootstrap interval
    assert _document(1.05, 1.0, {"ref": 0.0, "cand": 0.0})["faster"] is False  # 5%: within a process pair's offset


def test_host_paced_timings_get_the_wide_floor_on_either_side():
    for shares in ({"ref": 0.0, "cand": 0.6}, {"ref": 0.25, "cand": 0.0}):
        doc = _document(1.10, 1.0, shares)
        assert doc["host_bound"] is True and doc["process_noise_floor"] == calibration.HOST_BOUND_NOISE_FLOOR
        assert doc["faster"] is False and doc["speedup_ci"][0] < 1.0 < doc["speedup_ci"][1]
    assert _document(1.70, 1.0, {"ref": 0.0, "cand": 0.6})["faster"] is True


def test_reference_blocks_that_timed_its_host_withhold_faster():
    # Measured on an H200, problem 67 (docs/calibration.md): identical code read 5.3x "faster" because the reference's
    # blocks timed its launches.
    clean = _document(5.0, 1.0, {"ref": 0.0, "cand": 0.0}, reference_spin_short=[0.1, 0.2, 0.0, 0.1, 0.05, 0.1])
    assert clean["faster"] is True and clean["reference_blocks_spun_short"] == []
    for shares in ([0.79, 0.74, 0.95, 0.98, 0.93, 0.64], [0.1, 0.1, 0.5, 0.1, 0.1, 0.1]):
        doc = _document(5.0, 1.0, {"ref": 0.0, "cand": 0.0}, reference_spin_short=shares)
        assert doc["faster"] is False and doc["speedup_ci"][0] > 1.0  # the interval is as measured; the claim is not
        assert doc["reference_blocks_spun_short"] == [b for b, x in enumerate(shares) if x >= 0.5]
    # What benchmarks/judge_gpu.py counts in its A/A summaries.
    from evaluator.judge import selfcheck

    assert selfcheck.aa_summary({"verdict": "correct", "timing": doc})["faster_withheld"] is True
    assert selfcheck.aa_summary({"verdict": "correct", "timing": clean})["faster_withheld"] is False
    # A slower verdict is not withheld: short spins only ever make a side look slower.
    slow = _document(1.0, 2.0, {"ref": 0.0, "cand": 0.0}, reference_spin_short=[0.9] * 6)
    assert slow["speedup_ci"][1] < 1.0


def test_a_malformed_host_bound_share_is_the_candidates_fault_not_the_platforms():
    assert replies._host_share([{"host_bound": 0.25}, {"host_bound": 0.5}], "cand") == 0.5
    assert replies._host_share([{"host_bound": 7}, {}], "cand") == 1.0  # clamped: it only widens its own interval
    for bad in ("0.9", float("nan"), [1], True):
        with pytest.raises(replies._Stop) as stop:
            replies._host_share([{"host_bound": bad}], "cand")
        assert stop.value.verdict == schema.RUNTIME_ERROR  # a ValueError here used to become a retried infra_error
    with pytest.raises(replies._Stop) as stop:
        replies._host_share([{"host_bound": "x"}], "ref")
    assert stop.value.verdict == schema.INFRA_ERROR


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def test_pause_stops_a_trusted_group_and_resume_continues_it(tmp_path):
    """The reference is stopped while the candidate runs, as the candidate is while the reference runs."""
    group = RankGroup("ref", 2, "cpu", "1", "reference", str(tmp_path / "ref"), 64, 64, "bfloat16", True, trusted=True)
    try:
        group.collect(120)
        pids = [r.proc.pid for r in group.ranks]
        group.pause()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_state(p) != "T" for p in pids):
            time.sleep(0.05)
        assert [_state(p) for p in pids] == ["T", "T"]
        group.resume()
        replies = group.command({"cmd": "trial", "trial": 0, "seed": 3, "tag": "t"}, 120)
        assert len(replies) == 2 and all(r["ok"] for r in replies)
    finally:
        close_all([group])
    assert all(not os.path.exists(f"/proc/{p}") or _state(p) == "Z" for p in pids)
