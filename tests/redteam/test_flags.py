"""Flagged results never rank: the timing cross-check and the speed-of-light floor. See docs/threat-model.md, F."""

import pytest

import problems
from evaluator import judge
from evaluator.contract import schema
from evaluator.judge import evaluation
from evaluator.timing import calibration, pairs, physics
from evaluator.timing import rules as timing_rules
from tests.redteam.harness import TIMED, run


def _doc(cand_samples, cand_wall, device="cuda", **cfg):
    config = judge.Config(world_size=8, device=device, **cfg)
    ref = [[1.0] * 20 for _ in range(6)]
    cand = [list(cand_samples) for _ in range(6)]
    walls = {"ref": [1.2] * 6, "cand": [cand_wall] * 6}
    return timing_rules._timing_document(ref, cand, walls, config, problems.get(1), {"gpus": ["NVIDIA H200"]}, calls=21)


def test_consistent_fast_candidate_is_faster_and_ranked():
    doc = _doc([0.5] * 20, 0.7)
    assert doc["_flags"] == [] and doc["faster"] is True and doc["ranked"] is True


def test_reported_times_below_the_judges_clock_are_flagged():
    doc = _doc([0.5] * 20, 1.2)  # reports 0.5 ms per call, the judge saw 1.2 ms per call
    assert schema.FLAG_TIMING_CROSSCHECK in doc["_flags"]
    assert doc["faster"] is False and doc["ranked"] is False


def test_faster_than_light_is_flagged_at_default_shapes():
    # Problem 1 at 1024 x 1024 bf16, W=8 moves 3.67 MB per rank: at least 8.2 us over 450 GB/s NVLink.
    floor = physics.floor(problems.get(1), 1024, 1024, 8, "bfloat16", physics.H200)
    assert floor["applies"] and floor["floor_ms"] == pytest.approx(3670016 / 450e9 * 1e3)
    doc = _doc([0.004] * 20, 0.0045)  # 4 us per call, consistent with the judge's clock
    assert schema.FLAG_FASTER_THAN_LIGHT in doc["_flags"] and doc["faster"] is False and doc["ranked"] is False
    assert doc["speed_of_light"]["violated"] is True


def test_floor_is_skipped_where_the_estimate_does_not_hold():
    assert not physics.floor(problems.get(1), 512, 1024, 8, "bfloat16", physics.H200)["applies"]
    assert not physics.floor(problems.get(1), 1024, 1024, 8, "bfloat16", None)["applies"]
    assert physics.ceilings_for("cpu") is None and physics.ceilings_for("cuda", ["NVIDIA A100"]) is None
    gemm = physics.floor(problems.get(13), 1024, 1024, 8, "bfloat16", physics.H200)
    assert gemm["link_ms"] > gemm["compute_ms"] > 0  # 8.2 us of NVLink vs 1.4 us of tensor cores


def test_flagged_result_end_to_end_never_ranks():
    # Absurd ceilings make any honest run "faster than light": the flag must reach the result and block ranking.
    ceilings = {"name": "test", "link_bytes_per_s": 1.0, "flops_per_s": 1.0, "any_shape": True}
    result = run("honest_allreduce", **dict(TIMED, light_ceilings=ceilings))
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert schema.FLAG_FASTER_THAN_LIGHT in result["flags"]
    assert result["timing"]["faster"] is False and result["timing"]["ranked"] is False


def test_never_rank_guard_applies_to_any_flag():
    result = {"flags": [schema.FLAG_UNRANKED_DEVICE], "timing": {"faster": True, "ranked": True}}
    evaluation._never_rank_flagged(result)
    assert result["timing"] == {
        "faster": False,
        "ranked": False,
        "faster_at": {"1.0": False, "1.5": False, "2.0": False},
    }


def test_the_judges_spin_does_not_widen_the_allowance():
    # Measured on an H200 with 1 ms of side-stream work per call (docs/calibration.md): the candidate's wall held
    # 0.67 ms more per call than the reference's, both holding the judge's spin (sized from the slowest trial call, so
    # ~1 ms here). A quarter of the spin-inflated wall (0.77 ms) let it pass; a quarter of the wall less the spin
    # (0.52 ms) does not.
    config = judge.Config(world_size=1, device="cuda")
    ref = [[0.005] * 20 for _ in range(6)]
    cand = [[0.009] * 20 for _ in range(6)]
    walls = {"ref": [2.397] * 6, "cand": [3.065] * 6}
    doc = timing_rules._timing_document(ref, cand, walls, config, calls=21, spin_ms=1.0)
    assert doc["crosscheck"]["allowance_ms"] < 0.6 and schema.FLAG_TIMING_CROSSCHECK in doc["_flags"]
    assert doc["faster"] is False and doc["ranked"] is False
    honest = timing_rules._timing_document(
        ref, ref, {"ref": [2.397] * 6, "cand": [2.45] * 6}, config, calls=21, spin_ms=1.0
    )
    assert honest["_flags"] == []


def test_the_references_own_block_spread_widens_the_cross_check_and_the_candidates_does_not():
    # Measured on an H200, problem 35 (A/A, untrusted; docs/calibration.md): the candidate's wall held 0.15 ms a call
    # over the reference's in two pairs, against a 0.13 ms allowance, while the reference's own blocks spanned 0.17 ms a
    # call.
    config = judge.Config(world_size=1, device="cuda")
    ref = [[0.0013] * 100 for _ in range(6)]
    steady = {"ref": [0.69, 0.41, 0.41, 0.41, 0.41, 0.41], "cand": [0.63, 0.56, 0.56, 0.56, 0.56, 0.56]}
    doc = timing_rules._timing_document(ref, ref, steady, config, calls=101, spin_ms=0.05)
    assert doc["crosscheck"]["noise_ms"] == 0.0 and schema.FLAG_TIMING_CROSSCHECK in doc["_flags"]
    spread = dict(steady, ref=[0.69, 0.44, 0.39, 0.40, 0.41, 0.56])
    doc = timing_rules._timing_document(ref, ref, spread, config, calls=101, spin_ms=0.05)
    assert doc["crosscheck"]["noise_ms"] == pytest.approx(calibration.CROSSCHECK_RANGE_FACTOR * 0.17)
    assert doc["_flags"] == []
    # The candidate's spread is not evidence: it is the side under test.
    wild = dict(steady, cand=[0.63, 0.3, 0.9, 0.56, 0.56, 0.56])
    assert (
        schema.FLAG_TIMING_CROSSCHECK
        in timing_rules._timing_document(ref, ref, wild, config, calls=101, spin_ms=0.05)["_flags"]
    )
    # A spin the judge changed between blocks (the same on both sides) is not spread: it is taken out.
    spun = dict(steady, ref=[0.69, 0.41, 0.41, 0.61, 0.61, 0.61], cand=[0.63, 0.56, 0.56, 0.76, 0.76, 0.76])
    doc = timing_rules._timing_document(
        ref, ref, spun, config, calls=101, spin_ms=0.25, spins_ms=[0.05, 0.05, 0.05, 0.25, 0.25, 0.25]
    )
    assert doc["crosscheck"]["noise_ms"] == pytest.approx(0.0, abs=1e-9)
    assert schema.FLAG_TIMING_CROSSCHECK in doc["_flags"]


def test_the_crosscheck_keeps_each_blocks_wall_and_reported_median():
    # Honest pairs are sometimes suspect on an H200 (4 of 104 in one measurement, docs/calibration.md) for a reason not
    # yet known; the per-block numbers say whether the excess sits in one block or in all of them.
    config = judge.Config(world_size=1, device="cuda")
    ref = [[0.1, 0.2, 0.3]] * 3
    cand = [[0.4, 0.5, 0.6]] * 3
    walls = {"ref": [1.0, 1.1, 1.2], "cand": [2.0, 2.1, 2.2]}
    blocks = timing_rules._timing_document(ref, cand, walls, config, calls=4)["crosscheck"]["blocks_ms"]
    assert blocks == {
        "reference": {"wall": [1.0, 1.1, 1.2], "reported": [0.2, 0.2, 0.2]},
        "candidate": {"wall": [2.0, 2.1, 2.2], "reported": [0.5, 0.5, 0.5]},
    }


def _probe_doc(
    cand_claim,
    cand_probe_wall,
    cand_probe_reported,
    ref_claim=0.108,
    ref_probe_wall=0.55,
    ref_probe_reported=0.11,
    calls=49,
    ref_spread=0.0,
):
    """Spun blocks whose walls agree (both hold the spin), then three probe blocks (no spin) per side."""
    config = judge.Config(world_size=1, device="cuda")
    ref = [[ref_claim] * 12 for _ in range(6)]
    cand = [[cand_claim] * 12 for _ in range(6)]
    walls = {"ref": [2.0 + ref_claim] * 6, "cand": [2.0 + cand_claim] * 6}
    probe = {
        "ref": [[ref_probe_reported] * 48] * 3,
        "cand": [[cand_probe_reported] * 48] * 3,
        "walls": {
            "ref": [ref_probe_wall, ref_probe_wall + ref_spread, ref_probe_wall],
            "cand": [cand_probe_wall - 0.3, cand_probe_wall, 9.9],
        },
        "calls": calls,
    }
    return timing_rules._timing_document(ref, cand, walls, config, calls=13, spin_ms=1.9, probe=probe)


def test_work_beside_the_spin_shows_in_the_probe_blocks_wall():
    # The candidate claims 0.05 ms a call in the spun blocks, where its real 1 ms ran beside the spin: the spun
    # blocks' walls agree (the spin hides it) and only the probe blocks, with no spin, show the cost.
    doc = _probe_doc(
        cand_claim=0.05,
        cand_probe_wall=1.45,
        cand_probe_reported=0.05,
        ref_claim=1.0,
        ref_probe_wall=1.45,
        ref_probe_reported=1.0,
    )
    probe = doc["crosscheck"]["probe"]
    assert probe["excess_ms"] == pytest.approx(0.95, abs=1e-4) and probe["excess_ms"] > probe["allowance_ms"]
    assert probe["walls_ms"]["candidate"] == [1.15, 1.45, 9.9]  # the median of the blocks is read
    assert schema.FLAG_TIMING_CROSSCHECK in doc["_flags"] and doc["faster"] is False and doc["ranked"] is False
    # The same when it behaves honestly in the probe blocks (it can tell them apart): the wall is the same.
    assert schema.FLAG_TIMING_CROSSCHECK in _probe_doc(0.05, 1.45, 1.0, 1.0, 1.45, 1.0)["_flags"]


def test_one_pair_allows_the_measured_noise_of_its_probe_wall():
    # 0.1 ms hidden in a 0.108 ms call is within one pair's noise (the floor, docs/calibration.md): not flagged alone.
    doc = _probe_doc(cand_claim=0.008, cand_probe_wall=0.55, cand_probe_reported=0.008)
    probe = doc["crosscheck"]["probe"]
    assert probe["allowance_ms"] == pytest.approx(calibration.PROBE_FLOOR_MS["cuda"])
    assert probe["suspect"] is False


def test_the_references_spread_widens_the_allowance_and_the_candidates_does_not():
    # Problem 31, measured on an H200 (docs/calibration.md): the reference's probe blocks spanned 5.2-7.8 ms a call, and
    # the honest candidate's excess read 2.3 ms. The reference's spread is the judge's noise estimate; the candidate's
    # own blocks (one of them at 9.9 ms here) could be made to vary at will, and change nothing.
    spread = _probe_doc(0.108, 0.55 + 2.3, 0.11, ref_spread=2.7)["crosscheck"]["probe"]
    assert spread["allowance_ms"] == pytest.approx(calibration.PROBE_RANGE_FACTOR * 2.7) and spread["suspect"] is False
    assert _probe_doc(0.108, 0.55 + 2.3, 0.11)["crosscheck"]["probe"]["suspect"] is True


def test_a_candidate_whose_probe_wall_backs_its_claim_passes():
    # 10% faster on the GPU, and 0.01 ms a call less on the judge's clock at zero spin.
    doc = _probe_doc(cand_claim=0.098, cand_probe_wall=0.54, cand_probe_reported=0.099)
    assert doc["crosscheck"]["probe"]["suspect"] is False and doc["_flags"] == []
    assert doc["crosscheck"]["probe"]["excess_ms"] == pytest.approx(0.0, abs=1e-4)


def test_a_large_call_is_allowed_a_share_of_its_own_cost():
    # A 5 ms call: 25% of what the candidate costs at zero spin (less the reference's harness time) is allowed.
    ok = _probe_doc(
        cand_claim=4.5,
        cand_probe_wall=5.9,
        cand_probe_reported=4.5,
        ref_claim=5.0,
        ref_probe_wall=5.4,
        ref_probe_reported=5.0,
    )
    assert ok["crosscheck"]["probe"]["allowance_ms"] == pytest.approx(0.25 * (5.9 - 0.4))
    assert ok["crosscheck"]["probe"]["suspect"] is False
    hidden = _probe_doc(
        cand_claim=2.5,
        cand_probe_wall=5.4,
        cand_probe_reported=2.5,
        ref_claim=5.0,
        ref_probe_wall=5.4,
        ref_probe_reported=5.0,
    )
    assert hidden["crosscheck"]["probe"]["suspect"] is True


def test_pairs_pool_their_probe_excess():
    # 0.3 ms a call hidden in each of 8 pairs: below one pair's allowance (0.51 ms), above the pooled one (0.25 ms).
    def pair(excess):
        return {"crosscheck": {"probe": {"excess_ms": excess, "noise_ms": 0.51, "share_ms": 0.03}}}

    hidden = pairs.probe_pooled([pair(0.3)] * 8)
    assert hidden["suspect"] is True and hidden["allowance_ms"] == calibration.PROBE_POOLED_FLOOR_MS["cuda"]
    # The honest H200 runs (docs/calibration.md) with the largest mean excess either way (5% slower and 10% faster,
    # call 2).
    for excesses in ((0.02, 0.39, 0.21, -0.02, 0.15, 0.14, -0.09, 0.25), (-0.22, -0.03, -0.16, -0.23, 0.15, -0.17)):
        assert pairs.probe_pooled([pair(x) for x in excesses])["suspect"] is False
    assert pairs.probe_pooled([{"crosscheck": {}}]) is None
    # Few pairs: the one-pair allowance / sqrt(K) is the larger.
    assert pairs.probe_pooled([pair(0.3)] * 2)["suspect"] is False


def test_probe_blocks_stay_out_of_the_speedup():
    doc = _probe_doc(cand_claim=0.098, cand_probe_wall=0.54, cand_probe_reported=5.0)
    assert doc["candidate_ms"] == pytest.approx(0.098) and doc["samples"] == 72  # 6 spun blocks x 12


def test_probe_blocks_by_default_on_cuda_only():
    assert judge.Config(world_size=1, device="cuda").probe_blocks == 3
    assert judge.Config(world_size=1, device="cpu").probe_blocks == 0
    assert judge.Config(world_size=1, device="cpu", probe=2).probe_blocks == 2


def test_a_probe_block_runs_end_to_end_and_its_outputs_are_checked():
    # On CPU no block spins, so the probe block is off by default; asked for, it runs through the same harness,
    # with its own kept output checked against the reference like every timed block's.
    result = run("honest_allreduce", **dict(TIMED, probe=1, probe_always=True))
    assert result["verdict"] == schema.CORRECT, result["message"]
    probe = result["timing"]["crosscheck"]["probe"]
    assert probe["blocks"] == 1 and probe["calls"] >= 4
    assert probe["candidate_wall_per_call_ms"] > 0 and probe["reference_wall_per_call_ms"] > 0
    assert result["timing"]["verified_timed_calls"] == 2 * (judge.Config(world_size=2).blocks + 1)  # W = 2 ranks


def test_a_candidate_that_cannot_be_faster_skips_the_probe_blocks():
    # 10 ms a call against a reference of well under 1 ms: the spun blocks already say "not faster", so the probe
    # blocks (15% of a judgement) have nothing to guard.
    result = run("honest_slow", **dict(TIMED, probe=1))
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert "probe" not in result["timing"]["crosscheck"] and "cannot make" in result["timing"]["probe_skipped"]
    assert result["timing"]["verified_timed_calls"] == 2 * judge.Config(world_size=2).blocks  # spun blocks only


def test_the_probe_guards_every_pair_that_could_be_faster():
    one, eight = judge.Config(world_size=1, device="cuda"), judge.Config(world_size=1, device="cuda", pairs=8)
    assert timing_rules._could_be_faster({"speedup": 1.2, "speedup_ci": [1.05, 1.3]}, one)
    assert not timing_rules._could_be_faster({"speedup": 1.05, "speedup_ci": [0.97, 1.13]}, one)
    # With 8 pairs the combined interval is narrower than any pair's: any pair above 1.0 is probed.
    assert timing_rules._could_be_faster({"speedup": 1.01, "speedup_ci": [0.93, 1.09]}, eight)
    assert not timing_rules._could_be_faster({"speedup": 0.99, "speedup_ci": [0.91, 1.07]}, eight)
    assert not timing_rules._could_be_faster({"speedup": None, "speedup_ci": [0, 0]}, one)


def test_stored_cross_checks_are_rejudged_as_the_judge_judges_them():
    # benchmarks/crosscheck_rules.py re-reads stored runs: on a check the judge made today it must agree with it.
    import benchmarks.crosscheck_rules as crosscheck_rules

    config = judge.Config(world_size=1, device="cuda")
    ref = [[0.0013] * 100 for _ in range(6)]
    walls = {"ref": [0.69, 0.44, 0.39, 0.40, 0.41, 0.56], "cand": [0.63, 0.56, 0.56, 0.56, 0.56, 0.56]}
    spins = [0.05, 0.05, 0.06, 0.06, 0.05, 0.05]
    for cand_walls in (walls["cand"], [0.63, 0.66, 0.66, 0.66, 0.66, 0.66]):
        doc = timing_rules._timing_document(
            ref, ref, dict(walls, cand=cand_walls), config, calls=101, spin_ms=0.05, spins_ms=spins
        )
        check = doc["crosscheck"]
        again = crosscheck_rules.rejudge(check)
        assert (again["noise_ms"], again["allowance_ms"], again["suspect"]) == (
            check["noise_ms"],
            check["allowance_ms"],
            check["suspect"],
        )
    assert check["suspect"] is True  # the second: 0.25 ms a call over the reference's overhead
