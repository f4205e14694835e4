"""Flagged results never rank: the timing cross-check and the speed-of-light floor. See docs/threat-model.md, F."""
import pytest

import problems
from evaluator import judge, physics, schema
from tests.redteam.harness import TIMED, run


def _doc(cand_samples, cand_wall, device="cuda", **cfg):
    config = judge.Config(world_size=8, device=device, **cfg)
    ref = [[1.0] * 20 for _ in range(6)]
    cand = [list(cand_samples) for _ in range(6)]
    walls = {"ref": [1.2] * 6, "cand": [cand_wall] * 6}
    return judge._timing_document(ref, cand, walls, config, problems.get(1), {"gpus": ["NVIDIA H200"]}, calls=21)


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
    judge._never_rank_flagged(result)
    assert result["timing"] == {"faster": False, "ranked": False}


def test_the_judges_spin_does_not_widen_the_allowance():
    # GPU red-team run 5 (1 ms of side-stream work per call): the candidate's wall held 0.67 ms more per call than
    # the reference's, both holding the judge's spin (sized from the slowest trial call, so ~1 ms here). A quarter of
    # the spin-inflated wall (0.77 ms) let it pass; a quarter of the wall less the spin (0.52 ms) does not.
    config = judge.Config(world_size=1, device="cuda")
    ref = [[0.005] * 20 for _ in range(6)]
    cand = [[0.009] * 20 for _ in range(6)]
    walls = {"ref": [2.397] * 6, "cand": [3.065] * 6}
    doc = judge._timing_document(ref, cand, walls, config, calls=21, spin_ms=1.0)
    assert doc["crosscheck"]["allowance_ms"] < 0.6 and schema.FLAG_TIMING_CROSSCHECK in doc["_flags"]
    assert doc["faster"] is False and doc["ranked"] is False
    honest = judge._timing_document(ref, ref, {"ref": [2.397] * 6, "cand": [2.45] * 6}, config, calls=21,
                                    spin_ms=1.0)
    assert honest["_flags"] == []


def test_the_crosscheck_keeps_each_blocks_wall_and_reported_median():
    # Honest pairs are sometimes suspect on an H200 (run 6: 4 of 104) for a reason not yet known; the per-block
    # numbers say whether the excess sits in one block or in all of them.
    config = judge.Config(world_size=1, device="cuda")
    ref = [[0.1, 0.2, 0.3]] * 3
    cand = [[0.4, 0.5, 0.6]] * 3
    walls = {"ref": [1.0, 1.1, 1.2], "cand": [2.0, 2.1, 2.2]}
    blocks = judge._timing_document(ref, cand, walls, config, calls=4)["crosscheck"]["blocks_ms"]
    assert blocks == {"reference": {"wall": [1.0, 1.1, 1.2], "reported": [0.2, 0.2, 0.2]},
                      "candidate": {"wall": [2.0, 2.1, 2.2], "reported": [0.5, 0.5, 0.5]}}
