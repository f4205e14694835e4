"""Timing tricks: work outside the timed window (warm-up, one batched call, background threads and processes),
monkeypatched clocks and torch.distributed, patched judge modules, forged result channels, running beside the
reference. See docs/threat-model.md, section C. GPU-only variants (CUDA events, side streams, graph replay) are in
test_gpu.py."""

import re
import subprocess
import sys

import pytest

from evaluator.contract import schema
from tests.redteam.harness import CANDIDATES, TIMED, assert_never_correct_and_faster, logs, run


def assert_flagged(result):
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert schema.FLAG_TIMING_CROSSCHECK in result["flags"], result["timing"]["crosscheck"]
    assert result["timing"]["faster"] is False and result["timing"]["ranked"] is False
    assert_never_correct_and_faster(result)


def test_honest_slow_control_is_not_flagged():
    result = run("honest_slow", **TIMED)
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert result["flags"] == [], result["timing"]["crosscheck"]


def test_work_moved_into_warmup_is_flagged():
    assert_flagged(run("precompute_in_warmup", **TIMED))


def test_timed_calls_batched_into_one_are_flagged():
    assert_flagged(run("batched_first_call", **TIMED))


def test_patched_clock_is_flagged():
    assert_flagged(run("patches_clock", **TIMED))


def test_patched_torch_distributed_is_flagged():
    assert_flagged(run("patches_distributed", **TIMED))


def test_background_thread_finishing_after_the_window_is_caught():
    result = run("background_thread", **TIMED)
    assert result["verdict"] == schema.INCORRECT, result["message"]
    assert "timed call" in result["message"]


def test_side_process_finishing_after_the_window_is_caught():
    result = run("background_process", **TIMED)
    assert result["verdict"] in (schema.INCORRECT, schema.RUNTIME_ERROR), result["message"]


def test_patching_the_judges_modules_changes_nothing():
    result = run("patches_judge_modules")
    assert result["verdict"] == schema.INCORRECT, result["message"]


# A reference rank's check of problem 1 (evaluator/rank/outputs.py, imported first as in a rank), a wrong output
# (zeros for ones) before and after the candidate's patches run in the same process.
_CHECK_IN_THE_PATCHED_PROCESS = """
import runpy, sys, torch
import problems
from evaluator.rank import outputs
check = lambda: outputs.compare_rank(problems.get(1), torch.ones(4, 4), torch.zeros(4, 4), 0, 2)["ok"]
before = check()
runpy.run_path(sys.argv[1])
print(before, check())
"""


def test_control_patched_judge_modules_fool_a_check_made_in_their_own_process():
    """The control of the test above: the patch is not a dud. Were the check made in the candidate's process (the
    defence gone), that wrong output would pass; only the process boundary makes it ``incorrect``."""
    done = subprocess.run(
        [sys.executable, "-c", _CHECK_IN_THE_PATCHED_PROCESS, str(CANDIDATES / "patches_judge_modules.py")],
        cwd=CANDIDATES.parents[2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["False", "True"], done.stdout


def test_fake_json_on_stdout_is_ignored():
    result = run("forges_stdout")
    assert result["verdict"] == schema.INCORRECT, result["message"]
    assert '"verdict": "correct"' in logs(result)  # it did print it


def test_forged_replies_on_inherited_fds_are_not_believed():
    result = run("forges_reply_fd")
    assert result["verdict"] in (schema.INCORRECT, schema.RUNTIME_ERROR), result["message"]


def test_a_claimed_platform_failure_is_the_candidates():
    result = run("claims_infra_error")
    assert result["verdict"] == schema.RUNTIME_ERROR, result["message"]
    assert result["attempts"] == 1 and "fallen off the bus" in result["message"]


def test_exiting_zero_early_with_a_forged_reply_fails():
    result = run("exits_zero_early")
    assert result["verdict"] in (schema.INCORRECT, schema.RUNTIME_ERROR), result["message"]


def test_candidate_is_stopped_while_the_reference_runs():
    # Bigger tensors so that each reference block lasts a few hundred ms: the candidate's heartbeat thread must
    # see a gap for (nearly) every one of them.
    result = run("runs_beside_reference", **dict(TIMED, M=512, N=512, timing_budget_ms=2000))
    assert result["verdict"] == schema.CORRECT, result["message"]
    gaps = [int(x) for x in re.findall(r"GAP (\d+) ms", logs(result))]
    assert len([g for g in gaps if g >= 80]) >= 3, gaps


def test_inflated_trial_times_do_not_steer_the_timing_plan():
    result = run("inflates_trial_time", **TIMED)
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert "trial replies now claim 100 s" in logs(result)  # the forgery was in place
    # Held to the judge's own clock around the command (100 s was claimed), and the spin's starting point is the
    # reference's trial time alone.
    assert all(t["candidate_call_ms"] < 20_000 for t in result["trials"]), [
        t["candidate_call_ms"] for t in result["trials"]
    ]
    own = [t["reference_call_ms"] for t in result["trials"] if not t.get("after_timing")]
    assert result["timing"]["reference_estimate_ms"] == pytest.approx(min(own[1:]), abs=1e-4)
    assert result["timing"]["estimate_ms"] < 20_000
    assert_never_correct_and_faster(result)
