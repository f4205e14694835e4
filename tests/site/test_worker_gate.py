"""A worker checks the candidate sandbox once, before taking any job (leaderboard/jobs/sandbox_gate.py, check_sandbox):
every site job, ranked or not, jobs and feedback runs, needs the whole sandbox; a worker on a host that cannot give it
refuses to start, unless the operator said PKB_SANDBOX=off (then it says so loudly and every result is flagged)."""

import logging
import os
from types import SimpleNamespace

import pytest

from leaderboard.jobs import actors, judge_commands, sandbox_gate

INCOMPLETE = {
    "complete": False,
    "summary": "UNSANDBOXED (...): simulated",
    "missing": ["simulated: no bwrap"],
    "user": "x",
    "network": "x",
    "filesystem": "x",
}


@pytest.fixture
def incomplete(monkeypatch):
    monkeypatch.setattr(judge_commands, "host_support", lambda: dict(INCOMPLETE))
    monkeypatch.setattr(sandbox_gate, "_decided", {})


@pytest.mark.parametrize("queues", [{"gpu-h200x8"}, {"feedback-gpu-h200x8"}, {"cpu-gloo"}, {"feedback-cpu-gloo"}])
def test_any_worker_refuses_to_start_without_the_sandbox(incomplete, gpu, cpu, settings, queues):
    settings.PKB_SANDBOX_OFF = False
    with pytest.raises(actors.SandboxUnavailableOnHost, match="simulated: no bwrap"):
        actors.check_sandbox(queues)


def test_only_an_explicit_off_starts_without_it_and_says_so_loudly(incomplete, cpu, settings, caplog):
    settings.PKB_SANDBOX_OFF = True
    with caplog.at_level(logging.WARNING, logger="leaderboard.jobs.actors"):
        support = actors.check_sandbox({"cpu-gloo"})
    assert support["complete"] is False
    assert "PKB_SANDBOX=off" in caplog.text and "UNSANDBOXED" in caplog.text and "never rank" in caplog.text


def test_the_decision_is_taken_once_per_worker(monkeypatch, settings):
    """A transient failure after start never re-decides: the worker's jobs require the sandbox it found."""
    calls = []
    monkeypatch.setattr(judge_commands, "host_support", lambda: calls.append(1) or {"complete": True, "summary": "s"})
    monkeypatch.setattr(sandbox_gate, "_decided", {})
    actors.check_sandbox({"cpu-gloo"})
    actors.check_sandbox({"feedback-cpu-gloo"})
    assert calls == [1]


def test_the_feedback_worker_checks_the_sandbox_at_boot(incomplete, settings):
    from leaderboard.feedback import worker as feedback_worker  # noqa: F401  (its part of the one middleware)
    from leaderboard.jobs import worker_boot as bootstrap

    settings.PKB_SANDBOX_OFF = False
    worker = SimpleNamespace(consumer_whitelist={"feedback-cpu-gloo"})
    assert "feedback" in bootstrap.middleware().parts
    with pytest.raises(bootstrap.WorkerRefused, match="simulated: no bwrap") as refused:
        bootstrap.middleware().before_worker_boot(None, worker)
    assert isinstance(refused.value.__cause__, actors.SandboxUnavailableOnHost)


def test_a_worker_without_the_sandbox_really_does_not_start(incomplete, settings):
    """Through dramatiq's own Worker.start: its before_worker_boot only logs an exception that is not a
    MiddlewareError and boots the worker anyway, so the refusal must be one (leaderboard/jobs/worker_boot.py,
    WorkerRefused)."""
    import dramatiq
    from dramatiq.brokers.stub import StubBroker

    from leaderboard.jobs import worker_boot as bootstrap

    settings.PKB_SANDBOX_OFF = False
    broker = StubBroker()
    broker.emit_after("process_boot")
    broker.add_middleware(bootstrap.WorkerMiddleware())
    broker.declare_queue("cpu-gloo")
    worker = dramatiq.Worker(broker, queues={"cpu-gloo"}, worker_threads=1, worker_timeout=100)
    with pytest.raises(bootstrap.WorkerRefused, match="simulated: no bwrap"):
        worker.start()
    assert worker.workers == []  # no thread took, or will take, a message


def test_every_judge_command_requires_the_sandbox_unless_off(owner, gpu, cpu, submit, settings):
    from leaderboard.jobs import runner

    ranked_job = submit(owner, profile="gpu-h200x8").jobs.get()
    dev_job = submit(owner).jobs.get()
    settings.PKB_SANDBOX_OFF = False
    assert "--require-sandbox" in runner.judge_command(ranked_job, "c.py", "o.json")
    assert "--require-sandbox" in runner.judge_command(dev_job, "c.py", "o.json")
    settings.PKB_SANDBOX_OFF = True
    assert "--require-sandbox" not in runner.judge_command(dev_job, "c.py", "o.json")


def test_the_worker_reads_the_sandbox_and_sweeps_through_the_judges_command_line(tmp_path):
    """No monkeypatch: leaderboard/jobs/judge_commands.py runs
    ``python -m evaluator.cli sandbox-check|sweep --json``."""
    support = judge_commands.host_support()
    assert isinstance(support["complete"], bool) and support["summary"] and isinstance(support["missing"], list)
    assert support["complete"] == (not support["missing"])
    swept = judge_commands.sweep_orphans(str(tmp_path))
    assert swept["killed_outliving"] == 0 and swept["removed_files"] == 0
    with pytest.raises(judge_commands.JudgeCommandFailed, match="exited 2"):
        judge_commands.call("no-such-command")


def test_a_worker_directory_is_swept_only_when_its_owner_is_gone(tmp_path):
    import subprocess
    import sys

    from leaderboard.jobs import workspace

    live = workspace.claim(tmp_path, "host:1:live")
    # A worker that exits without cleaning up (killed): its lock goes with it, its directory stays.
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; from leaderboard.jobs import workspace; "
            f"workspace.claim({str(tmp_path)!r}, 'host:2:dead'); os._exit(0)",
        ],
        check=True,
    )
    released = []
    report = workspace.recover_dead(tmp_path, release=lambda worker: released.append(worker) or 1)
    assert released == ["host:2:dead"] and report["workers"] == 1 and report["released"] == 1
    assert os.path.isdir(live.path)  # its owner (this process) still holds the lock
    workspace.release(live)
    assert not os.path.exists(live.path)
