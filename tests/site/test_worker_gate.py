"""A worker checks the candidate sandbox before taking any job (leaderboard/actors.py, check_sandbox): it refuses to
start where a ranked profile's queue (or PKB_SANDBOX=required) would run candidates without the whole sandbox, and
otherwise says loudly what is missing."""
import logging

import pytest

from evaluator import sandbox
from leaderboard import actors

INCOMPLETE = {"complete": False, "summary": "UNSANDBOXED (...): simulated", "missing": ["simulated: no bwrap"],
              "user": "x", "network": "x", "filesystem": "x"}


@pytest.fixture
def incomplete(monkeypatch):
    monkeypatch.setattr(sandbox, "host_support", lambda: dict(INCOMPLETE))


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
    with caplog.at_level(logging.WARNING, logger="leaderboard.actors"):
        support = actors.check_sandbox({"cpu-gloo"})
    assert support["complete"] is False
    assert "UNSANDBOXED" in caplog.text and "never rank" in caplog.text


def test_the_judge_command_of_a_ranked_profile_requires_the_sandbox(owner, gpu, cpu, submit):
    from leaderboard import runner

    ranked_job = submit(owner, profile="gpu-h200x8").jobs.get()
    dev_job = submit(owner).jobs.get()
    assert "--require-sandbox" in runner.judge_command(ranked_job, "c.py", "o.json")
    assert "--require-sandbox" not in runner.judge_command(dev_job, "c.py", "o.json")
