"""The feedback document built from a judge document (pure): speed-of-light efficiency on a GPU profile, "n/a" where
the estimate does not hold, mismatch of a timed call, reference logs never included."""

from leaderboard.feedback import report


def gpu_document(light):
    return {
        "verdict": "correct",
        "device": "cuda",
        "world_size": 8,
        "trials": [],
        "logs": [
            {"role": "candidate", "rank": 0, "stderr": "mine"},
            {"role": "reference", "rank": 0, "stderr": "theirs"},
        ],
        "timing": {
            "candidate_ms": 0.5,
            "reference_ms": 1.0,
            "speedup": 2.0,
            "speedup_ci": [1.8, 2.2],
            "faster": True,
            "ranked": True,
            "speed_of_light": light,
        },
    }


def test_efficiency_against_the_judges_floor():
    light = {
        "applies": True,
        "floor_ms": 0.1,
        "link_ms": 0.1,
        "compute_ms": 0.02,
        "bytes_per_rank": 45_000_000,
        "flops_per_rank": 1.58e10,
        "violated": False,
    }
    feedback = report.build(gpu_document(light), 1000, 8000, [1 << 62])
    sol = feedback["speed_of_light"]
    assert sol["efficiency"] == 0.2 and sol["floor_ms"] == 0.1
    assert sol["hbm_ms"] == round(45_000_000 / 4.3e12 * 1e3, 6) and "790 TFLOP/s" in sol["ceilings"]
    assert [r["rank"] for r in feedback["compile_log"]["ranks"]] == [0]
    assert "theirs" not in str(feedback)
    assert "20.0% of the floor" in report.text(feedback)


def test_not_applicable_off_the_catalogue_shape():
    light = {"applies": False, "reason": "the catalogue's estimate holds at M=N=1024, bf16, W=8 only"}
    sol = report.build(gpu_document(light), 1, 8, [])["speed_of_light"]
    assert sol["efficiency"] == "n/a" and "M=N=1024" in sol["reason"]


def test_timed_call_mismatch_is_reported():
    document = {
        "verdict": "incorrect",
        "message": "a timed call's output was wrong: block 2, call 7, rank 1",
        "trials": [{"trial": 0, "seed": 5, "verdict": "correct", "ranks": []}],
        "timing": None,
    }
    miss = report.build(document, 0, 0, [])["mismatch"]
    assert miss["trial"] is None and "timed call" in miss["message"]


def test_a_probe_flag_says_which_clock_disagreed_and_by_how_much():
    document = gpu_document({"applies": False, "reason": "off shape"})
    document["flags"] = ["timing_crosscheck"]
    document["timing"].update(
        faster=False,
        ranked=False,
        crosscheck={
            "suspect": True,
            "unexplained_ms": 0.01,
            "allowance_ms": 0.2,
            "probe": {"excess_ms": 1.13, "allowance_ms": 0.51, "suspect": True, "walls_ms": {"reference": [6.4]}},
        },
    )
    feedback = report.build(document, 1, 8, [])
    assert feedback["timing"]["crosscheck"]["probe"] == {"excess_ms": 1.13, "allowance_ms": 0.51, "suspect": True}
    line = report.text(feedback)
    assert "with no spin the judge's clock saw 1.13 ms a call more" in line and "0.51 ms allowed" in line
    document["timing"]["crosscheck"].update(probe=None, unexplained_ms=0.4)
    assert "0.4 ms a call outside the timed window" in report.text(report.build(document, 1, 8, []))


def test_a_pooled_probe_flag_gives_the_mean_over_the_pairs():
    check = {
        "unexplained_ms": 0.0,
        "allowance_ms": 0.2,
        "probe": {"excess_ms": 0.3, "allowance_ms": 0.51, "suspect": False},
    }
    line = report.crosscheck_line(check, {"pairs": 8, "mean_excess_ms": 0.3, "allowance_ms": 0.25, "suspect": True})
    assert "over 8 pairs" in line and "mean 0.3 ms a call" in line and "0.25 ms allowed" in line


def test_faster_withheld_when_the_references_blocks_timed_its_host():
    # Measured on an H200, problem 67: the reference's blocks timed its launches; the interval is above 1.0, the claim
    # is not.
    document = gpu_document({"applies": False, "reason": "off shape"})
    document["timing"].update(faster=False, reference_blocks_spun_short=[0, 2, 3])
    feedback = report.build(document, 1, 8, [])
    assert "blocks [0, 2, 3]" in feedback["timing"]["faster_withheld"]
    assert "not faster" in report.text(feedback) and "timed the reference's launches" in report.text(feedback)
    document["timing"].update(reference_blocks_spun_short=[], reference_spun_short_pairs=[3])
    assert "pairs [3]" in report.build(document, 1, 8, [])["timing"]["faster_withheld"]
    document["timing"].update(reference_spun_short_pairs=[])
    assert report.build(document, 1, 8, [])["timing"]["faster_withheld"] is None


def test_the_site_states_the_ceilings_with_the_contracts_text():
    """The run page's ceilings line and renderers are the contract's (evaluator/contract/feedback_text.py, which ``pkb
    feedback`` uses too), in units a reader knows."""
    from evaluator.contract import feedback_text

    assert report.CEILINGS_TEXT == "H200: NVLink 450 GB/s per direction, HBM 4.3 TB/s, 790 TFLOP/s dense bf16"
    assert report.text is feedback_text.text and report.crosscheck_line is feedback_text.crosscheck_line


def test_a_feedback_that_ended_before_judging_prints_no_python_none():
    # A run refused or lost before the judge answered has no problem, W, shape or metering: the text leaves them out.
    from evaluator.contract import feedback_text

    text = feedback_text.text(
        {
            "verdict": "infra_error",
            "message": "the worker could not start the judge",
            "speed_of_light": {"reason": "no timing"},
        }
    )
    assert "None" not in text, text
    assert text.splitlines()[0].startswith("verdict: INFRA_ERROR")
    assert "metered: nothing" in text
    full = feedback_text.text(
        {
            "verdict": "correct",
            "problem": "1_allreduce",
            "world_size": 2,
            "device": "cpu",
            "shape": {"M": 64, "N": 32, "dtype": "bfloat16"},
            "seeds": [7],
            "metering": {"wall_s": 1.5},
            "speed_of_light": {"reason": "cpu"},
        }
    )
    assert "problem 1_allreduce  W=2  cpu  M=64 N=32  bfloat16  public seeds 7" in full
    assert "rank-seconds 3.0" in full
