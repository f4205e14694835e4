"""Peak fraction (evaluator/timing/peak.py): the speed-of-light floor at the shape and W run over the candidate's
median, with an interval from the candidate's own samples; on CPU with explicit ceilings, end to end."""

import statistics

import pytest

from evaluator import judge
from evaluator.contract import schema
from evaluator.timing import pairs, peak

LIGHT = {"applies": True, "floor_ms": 0.5, "link_ms": 0.5, "compute_ms": 0.1, "ceilings": "test"}


def test_fraction_is_the_floor_over_the_median_with_the_interval_inverted():
    record = peak.fraction(LIGHT, 2.0, [1.6, 2.5])
    assert record["applies"] and record["value"] == pytest.approx(0.25)
    assert record["ci"] == [pytest.approx(0.2), pytest.approx(0.3125)]  # slower end -> lower fraction
    assert record["bound"] == "interconnect" and record["floor_ms"] == 0.5


def test_no_floor_means_a_reason_and_no_number():
    record = peak.fraction(
        {"applies": False, "reason": "the catalogue's estimate holds at M=N=1024, bf16, W=8 only"}, 2.0, None
    )
    assert record == {"applies": False, "reason": "the catalogue's estimate holds at M=N=1024, bf16, W=8 only"}
    assert "value" not in peak.fraction(None, 2.0, None)


def test_the_interval_holds_the_median_and_widens_by_the_noise_floor():
    blocks = [[1.0 + 0.01 * ((i * 7 + b) % 11) for i in range(30)] for b in range(4)]
    median = statistics.median(x for b in blocks for x in b)
    low, high = peak.median_interval(blocks)
    assert low <= median <= high and high - low < 0.1
    interval, record = peak.for_pair(LIGHT, blocks, median, 0.5)
    assert interval[0] == pytest.approx(low / 1.5, rel=1e-5) and interval[1] == pytest.approx(high * 1.5, rel=1e-5)
    assert record["ci"][0] < record["value"] < record["ci"][1]


def test_without_a_floor_no_bootstrap_runs():
    interval, record = peak.for_pair({"applies": False, "reason": "no peak rates"}, [], 1.0, 0.5)
    assert interval is None and record["reason"] == "no peak rates"


def test_k_pairs_take_the_median_time_and_span_every_pair():
    timings = [
        {"speed_of_light": LIGHT, "candidate_ms": ms, "candidate_ci_ms": [ms * 0.9, ms * 1.1]} for ms in (1.0, 1.2, 1.1)
    ]
    record = peak.combined(timings, 1.1)
    assert record["value"] == pytest.approx(0.5 / 1.1, rel=1e-5)
    assert record["ci"] == [pytest.approx(0.5 / 1.32, rel=1e-5), pytest.approx(0.5 / 0.9, rel=1e-5)]


def test_combine_replaces_the_first_pair_s_peak_fraction():
    def pair(ms):
        return {
            "speedup": 1.0,
            "bootstrap_ci": [0.9, 1.1],
            "reference_ms": 1.0,
            "candidate_ms": ms,
            "samples": 10,
            "reference_samples": 10,
            "blocks": 4,
            "speed_of_light": LIGHT,
            "candidate_ci_ms": [ms, ms],
            "peak_fraction": peak.fraction(LIGHT, ms, [ms, ms]),
        }

    doc = pairs.combine([pair(1.0), pair(2.0), pair(4.0)], "cpu", 0.5)
    assert doc["peak_fraction"]["value"] == pytest.approx(0.25) and doc["peak_fraction"]["ci"] == [0.125, 0.5]


def test_a_cpu_run_with_explicit_ceilings_reports_its_peak_fraction():
    # The real judge on CPU gloo ranks, problem 1 (all-reduce) at W = 2, with ceilings given explicitly (a CPU has
    # none by default) and any_shape so the catalogue's estimate is used at this small shape.
    ceilings = {"name": "test-cpu", "link_bytes_per_s": 50e9, "flops_per_s": 1e12, "any_shape": True}
    result = judge.evaluate(
        1, "reference", 2, "cpu", M=64, N=32, trials=1, seed=5, timing_budget_ms=40, light_ceilings=ceilings
    )
    assert result["verdict"] == schema.CORRECT, result["message"]
    timing = result["timing"]
    light, record = timing["speed_of_light"], timing["peak_fraction"]
    assert light["applies"] and record["applies"] and record["ceilings"] == "test-cpu"
    assert record["value"] == pytest.approx(light["floor_ms"] / timing["candidate_ms"], rel=1e-3)
    assert record["ci"][0] <= record["value"] <= record["ci"][1]
    # Without ceilings (the CPU default) the document says why there is no number.
    plain = judge.evaluate(1, "reference", 2, "cpu", M=64, N=32, trials=1, seed=5, timing_budget_ms=40)
    assert plain["timing"]["peak_fraction"]["applies"] is False and plain["timing"]["peak_fraction"]["reason"]
