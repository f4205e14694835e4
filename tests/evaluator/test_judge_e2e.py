"""End-to-end: the real judge, real rank processes on a CPU gloo world. The verdict paths run at W = 4, where the rank
that fails is neither the first nor the last and the others wait in a collective; W = 2 is the world of every
red-team test (tests/redteam/), so running these at both would judge the same paths twice."""

import json
import os
import pathlib
import subprocess
import sys
import tempfile

import pytest

from evaluator import judge
from evaluator.contract import schema
from tests.evaluator import psutil_free

HERE = pathlib.Path(__file__).parent
CANDIDATES = HERE / "candidates"
SMALL = dict(M=64, N=32, trials=5, seed=11, timing_budget_ms=60)


def run(candidate: str, W: int, **options):
    path = candidate if candidate == "reference" else str(CANDIDATES / f"{candidate}.py")
    return judge.evaluate(1, path, W, "cpu", **{**SMALL, **options})


@pytest.mark.parametrize("W", [4])
def test_correct_candidate(W):
    result = run("allreduce_correct", W)
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert len(result["trials"]) == 6 and result["trials"][-1]["after_timing"]
    assert len({t["seed"] for t in result["trials"]}) == 6  # fresh seed every trial
    assert all(len(t["ranks"]) == W for t in result["trials"])
    timing = result["timing"]
    assert timing["ranked"] is False and timing["method"] == "wall_clock"
    assert timing["speedup_ci"][0] <= timing["speedup"] <= timing["speedup_ci"][1]
    assert result["environment"]["backend"] == "gloo" and result["environment"]["torch"]
    # Where the judging time went: every command kind of both sides, the reference ranks' reading and comparing of
    # the candidate's files (out of their check commands), taking kept outputs out of the candidate's reach, adding
    # up to the judging phase (the rest, "other", is the judge's own bookkeeping and cannot be negative).
    parts = result["phases_s"]["judge_parts"]
    for key in (
        "reference_trial",
        "candidate_trial",
        "reference_time",
        "candidate_time",
        "candidate_kept",
        "reference_check",
        "read_outputs",
        "compare",
        "take_kept",
    ):
        assert parts[key] > 0, (key, parts)
    assert parts["other"] >= -0.01 and sum(parts.values()) == pytest.approx(result["phases_s"]["judge"], abs=0.02)


@pytest.mark.parametrize("W", [4])
def test_wrong_candidate_names_rank_and_place(W):
    result = run("allreduce_wrong", W)
    assert result["verdict"] == schema.INCORRECT
    first = result["trials"][0]["ranks"][0]
    assert not first["ok"] and first["first_mismatch_index"] is not None and first["max_abs_error"] > 0
    assert "rank 0" in result["message"] and "elements outside" in result["message"]
    assert result["timing"] is None


@pytest.mark.parametrize("W", [4])
def test_exception_on_rank_one_only(W):
    result = run("allreduce_raises_rank1", W, timeout_s=20)
    assert result["verdict"] == schema.RUNTIME_ERROR
    assert "rank 1" in result["message"] and "boom on rank 1" in result["message"]


@pytest.mark.parametrize("W", [4])
def test_deadlock_is_killed_as_timeout(W):
    result = run("allreduce_deadlock", W, timeout_s=3)
    assert result["verdict"] == schema.TIMEOUT
    assert "did not answer" in result["message"]
    assert result["wall_s"] < 60


def test_syntax_error_is_compile_error_without_launch():
    result = run("allreduce_syntax_error", 2)
    assert result["verdict"] == schema.COMPILE_ERROR and "line 1" in result["message"]


@pytest.mark.parametrize("name", ["allreduce_import_error", "allreduce_no_solution"])
def test_import_failures_are_compile_errors(name):
    result = run(name, 2)
    assert result["verdict"] == schema.COMPILE_ERROR, result["message"]


@pytest.mark.parametrize("W", [4])
def test_rank_exiting_early(W):
    result = run("allreduce_exits_early", W, timeout_s=20)
    assert result["verdict"] == schema.RUNTIME_ERROR
    assert "rank 1" in result["message"] and "exited early" in result["message"]


def test_nan_is_incorrect_and_another_dtype_is_flagged():
    nan = run("allreduce_nan", 2)
    assert nan["verdict"] == schema.INCORRECT and "non-finite" in nan["message"]
    # float32 values equal to the bf16 reference's: correct by the dtype rule (docs/dtype.md), flagged, never faster.
    dtype = run("allreduce_wrong_dtype", 2)
    assert dtype["verdict"] == schema.CORRECT and schema.FLAG_DTYPE_DIFFERS in dtype["flags"], dtype["message"]
    assert dtype["timing"]["faster"] is False and "float32 for expected bfloat16" in dtype["message"]


@pytest.mark.parametrize("W", [1, 4])
def test_reference_against_itself(W):
    result = run("reference", W)
    assert result["verdict"] == schema.CORRECT
    assert result["timing"]["faster"] is False or result["timing"]["speedup_ci"][0] > 1.0


def test_no_process_left_behind(tmp_path, monkeypatch):
    # The judge's work directories (and so its ranks' --out arguments) go under a temp dir of this test only.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    marker = str(tmp_path)
    run("allreduce_deadlock", 2, timeout_s=3)
    run("allreduce_correct", 2)
    assert psutil_free.rank_workers(marker) == 0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("pkb-judge-")]  # work directories removed


def test_cli_exit_codes_and_json(tmp_path):
    env = dict(os.environ)
    out = tmp_path / "r.json"
    env["PYTHONPATH"] = str(HERE.parents[1])
    # A relative candidate path, from another directory: the ranks run in their own scratch directories.
    ok = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluator",
            "eval",
            "1_allreduce",
            "candidates/allreduce_wrong.py",
            "-W",
            "2",
            "--M",
            "32",
            "--N",
            "16",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=HERE,
    )
    assert ok.returncode == 0, ok.stderr
    document = json.loads(out.read_text())
    assert document["verdict"] == "incorrect" and document["problem"] == "1_allreduce"
    assert "INCORRECT" in ok.stdout
    for argv, needle in (
        (["999", "reference", "-W", "2"], "unknown problem"),
        (["1", str(tmp_path / "missing.py"), "-W", "2"], "not found"),
        (["1", "reference", "-W", "0"], "world size 0"),
    ):
        bad = subprocess.run(
            [sys.executable, "-m", "evaluator", "eval", *argv], capture_output=True, text=True, env=env, timeout=120
        )
        assert bad.returncode == 2 and needle in bad.stderr, bad.stderr


def test_wrong_only_after_the_timed_loop_is_caught_by_the_recheck():
    """Right in every trial and every kept timed call (all verified), wrong only in the re-check trial after timing:
    incorrect, and the message says where; remove the re-check and it would be correct."""
    result = run("wrong_only_after_timing", 2, trials=2)
    assert result["verdict"] == schema.INCORRECT, result["message"]
    assert result["message"].startswith("outputs changed after the timed loop"), result["message"]
    assert result["trials"][-1]["after_timing"] and result["timing"] is None
    assert all(t["verdict"] == schema.CORRECT for t in result["trials"][:-1])


def test_ranks_of_one_group_share_one_tmpdir():
    # What torch's symmetric memory needs to pass CUDA IPC handles between a group's ranks (its sockets live in
    # $TMPDIR), exercised on CPU: each rank leaves a marker in its TMPDIR and must see its peers' after a barrier.
    result = run("allreduce_meets_peers_in_tmp", 2, trials=1, timing=False)
    assert result["verdict"] == schema.CORRECT, result["message"]
