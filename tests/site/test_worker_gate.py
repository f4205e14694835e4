"""A worker checks the candidate sandbox before taking any job (leaderboard/jobs/actors.py, check_sandbox): it refuses to
start where a ranked profile's queue (or PKB_SANDBOX=required) would run candidates without the whole sandbox, and
otherwise says loudly what is missing."""
import logging
import os

import pytest

from leaderboard.jobs import actors, judge_commands

INCOMPLETE = {"complete": False, "summary": "UNSANDBOXED (...): simulated", "missing": ["simulated: no bwrap"],
              "user": "x", "network": "x", "filesystem": "x"}


@pytest.fixture
def incomplete(monkeypatch):
    monkeypatch.setattr(judge_commands, "host_support", lambda: dict(INCOMPLETE))


def test_a_worker_for_a_ranked_profile_refuses_to_start_without_the_sandbox(incomplete, gpu):
    with pytest.raises(actors.SandboxUnavailableOnHost, match="gpu-h200x8.*simulated: no bwrap"):
        actors.check_sandbox({"gpu-h200x8"})
    with pytest.raises(actors.SandboxUnavailableOnHost):
        actors.check_sandbox({"feedback-gpu-h200x8"})


def test_required_by_the_deployment_refuses_any_queue(incomplete, cpu, settings):
    settings.PKB_SANDBOX_REQUIRED = True
    with pytest.raises(actors.SandboxUnavailableOnHost, match="PKB_SANDBOX=required"):
        actors.check_sandbox({"cpu-gloo"})


def test_an_unranked_queue_starts_and_says_so_loudly(incomplete, cpu, settings, caplog):
    settings.PKB_SANDBOX_REQUIRED = False
    with caplog.at_level(logging.WARNING, logger="leaderboard.jobs.actors"):
        support = actors.check_sandbox({"cpu-gloo"})
    assert support["complete"] is False
    assert "UNSANDBOXED" in caplog.text and "never rank" in caplog.text


def test_the_judge_command_of_a_ranked_profile_requires_the_sandbox(owner, gpu, cpu, submit):
    from leaderboard.jobs import runner

    ranked_job = submit(owner, profile="gpu-h200x8").jobs.get()
    dev_job = submit(owner).jobs.get()
    assert "--require-sandbox" in runner.judge_command(ranked_job, "c.py", "o.json")
    assert "--require-sandbox" not in runner.judge_command(dev_job, "c.py", "o.json")


def test_the_worker_reads_the_sandbox_and_sweeps_through_the_judges_command_line(tmp_path):
    """No monkeypatch: leaderboard/jobs/judge_commands.py runs ``python -m evaluator.cli sandbox-check|sweep --json``."""
    support = judge_commands.host_support()
    assert isinstance(support["complete"], bool) and support["summary"] and isinstance(support["missing"], list)
    assert support["complete"] == (not support["missing"])
    assert judge_commands.sweep_orphans(str(tmp_path)) == {"killed_outliving": 0, "removed_files": 0}
    with pytest.raises(judge_commands.JudgeCommandFailed, match="exited 2"):
        judge_commands.call("no-such-command")


def test_a_worker_directory_is_swept_only_when_its_owner_is_gone(tmp_path):
    import subprocess
    import sys

    from leaderboard.jobs import workspace

    live = workspace.claim(tmp_path, "host:1:live")
    # A worker that exits without cleaning up (killed): its lock goes with it, its directory stays.
    subprocess.run([sys.executable, "-c", "import os, sys; from leaderboard.jobs import workspace; "
                    f"workspace.claim({str(tmp_path)!r}, 'host:2:dead'); os._exit(0)"], check=True)
    released = []
    report = workspace.recover_dead(tmp_path, release=lambda worker: released.append(worker) or 1)
    assert released == ["host:2:dead"] and report["workers"] == 1 and report["released"] == 1
    assert os.path.isdir(live.path)  # its owner (this process) still holds the lock
    workspace.release(live)
    assert not os.path.exists(live.path)
