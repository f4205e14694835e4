"""leaderboard/jobs/runner.py: the worker side of a job. Two tests run the real judge (W = 2, CPU gloo, problem 1);
the others replace only the judge *command* to simulate platform failures (crash, garbage output, hang, lost
lease): those must end as infra_error, never as a verdict against the candidate."""

import ast
import re
import sys
import threading
import time
from pathlib import Path

import pytest
from django.db import connection

from evaluator.contract.schema import JudgeRequest
from leaderboard.accounts.models import QuotaCharge
from leaderboard.jobs import judge_process, runner
from leaderboard.jobs.models import EvaluationJob, Result
from tests.site.conftest import GOOD_1, WRONG_1


@pytest.fixture
def quick(cpu):
    cpu.trials = 1
    cpu.save()
    return cpu


def test_real_judge_correct_and_incorrect(owner, submit, quick):
    submission = submit(
        owner,
        {"attempt_1/1_allreduce_torch.py": WRONG_1, "attempt_2/1_allreduce_torch.py": GOOD_1},
        protocol="best_of_k",
        attempts=2,
    )
    jobs = {j.candidate.attempt: j for j in submission.jobs.select_related("candidate")}
    assert runner.run_job(jobs[1].pk, "test-runner") == "done"
    assert runner.run_job(jobs[2].pk, "test-runner") == "done"
    wrong = Result.objects.get(job=jobs[1])
    right = Result.objects.get(job=jobs[2])
    assert wrong.verdict == "incorrect" and wrong.speedup is None
    assert right.verdict == "correct" and right.speedup is not None and right.speedup_lo <= right.speedup
    assert right.document["environment"]["backend"] == "gloo" and right.document["world_size"] == 2
    assert right.document["timing"]["ranked"] is False  # CPU timings never rank
    score = submission.scores.get(problem_id=1)
    assert (score.status, score.attempt, score.attempts_correct) == ("correct", 2, 1)
    submission.refresh_from_db()
    assert submission.entry.correct == 1
    assert runner.run_job(jobs[2].pk, "another-worker") == "not_claimed"  # done jobs are never judged again


def fake_command(monkeypatch, code: str):
    """The job's request still built by the runner; only the command it starts is replaced."""
    monkeypatch.setattr(JudgeRequest, "command", lambda request: [sys.executable, "-c", code, request.json_out])


@pytest.mark.parametrize(
    "code, message",
    [
        ("import sys; sys.exit(3)", "exited with status 3"),
        ("import sys; open(sys.argv[1], 'w').write('{not json')", "no readable result"),
        ("import sys, json; json.dump({'verdict': 'great'}, open(sys.argv[1], 'w'))", "no known verdict"),
    ],
)
def test_judge_failures_are_infra_errors(owner, submit, cpu, monkeypatch, code, message):
    fake_command(monkeypatch, code)
    job = submit(owner).jobs.get()
    assert runner.run_job(job.pk, "w") == "infra_error"
    job.refresh_from_db()
    assert job.status == "queued" and message in job.last_error  # retried
    result = Result.objects.get(job=job)
    assert result.verdict == "infra_error" and not result.is_final
    assert job.submission.scores.get(problem_id=1).status == "pending"


def test_retries_run_out_then_refund(owner, submit, cpu, monkeypatch):
    fake_command(monkeypatch, "import sys; sys.exit(1)")
    job = submit(owner).jobs.get()
    for _ in range(job.max_attempts):
        runner.run_job(job.pk, "w")
    job.refresh_from_db()
    assert job.status == "failed" and QuotaCharge.objects.get(job=job).refunded_at is not None


def test_hung_judge_is_killed_at_the_job_timeout(owner, submit, cpu, monkeypatch, settings):
    settings.PKB_JOB_TIMEOUT_SECONDS = 2
    settings.PKB_HEARTBEAT_SECONDS = 1
    fake_command(monkeypatch, "import time; time.sleep(60)")
    job = submit(owner).jobs.get()
    started = time.monotonic()
    assert runner.run_job(job.pk, "w") == "infra_error"
    assert time.monotonic() - started < 20
    job.refresh_from_db()
    assert "timeout" in job.last_error


def test_a_killed_judge_leaves_no_rank_or_daemon_behind(owner, submit, cpu, monkeypatch, settings, tmp_path):
    """What the judge's own clean-up would have killed: a process in a session of its own (as ranks and daemons are)
    carrying a scratch path in the judge's temporary directory."""
    settings.PKB_JOB_TIMEOUT_SECONDS = 2
    settings.PKB_HEARTBEAT_SECONDS = 1
    pid_file = tmp_path / "daemon.pid"
    fake_command(
        monkeypatch,
        (
            "import os, subprocess, sys, time\n"
            "scratch = os.path.join(os.environ['TMPDIR'], 'pkb-judge-x', 'cand', 'rank0')\n"
            "os.makedirs(scratch)\n"
            "daemon = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'], "
            "start_new_session=True,\n"
            "                          env=dict(os.environ, PKB_SCRATCH=scratch))\n"
            f"open({str(pid_file)!r}, 'w').write(str(daemon.pid))\n"
            "time.sleep(60)\n"
        ),
    )
    job = submit(owner).jobs.get()
    assert runner.run_job(job.pk, "w") == "infra_error"
    pid = int(pid_file.read_text())
    assert _gone(pid)


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@pytest.mark.django_db(transaction=True)
def test_lost_lease_stops_the_judge_and_writes_nothing(owner, submit, cpu, monkeypatch, settings):
    settings.PKB_HEARTBEAT_SECONDS = 1
    fake_command(monkeypatch, "import time; time.sleep(60)")
    job = submit(owner).jobs.get()

    def steal():
        time.sleep(1.5)
        EvaluationJob.objects.filter(pk=job.pk).update(lease_owner="thief")
        connection.close()

    thief = threading.Thread(target=steal)
    thief.start()
    assert runner.run_job(job.pk, "w") == "lease_lost"
    thief.join()
    assert not Result.objects.filter(job=job).exists()


def test_judge_environment_has_no_secrets(monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", "postgres://u:secret@db/x")
    monkeypatch.setenv("BROKER_URL", "amqp://u:secret@mq/")
    monkeypatch.setenv("DJANGO_SECRET_KEY", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "k")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    env = judge_process.judge_env(tmp_path)
    assert not {"DATABASE_URL", "BROKER_URL", "DJANGO_SECRET_KEY", "AWS_SECRET_ACCESS_KEY"} & set(env)
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1" and env["TMPDIR"] == str(tmp_path)


def test_judge_command_follows_the_profile(owner, submit, gpu, tmp_path):
    gpu.multicast_allowed = True
    gpu.save()
    job = submit(owner, profile="gpu-h200x8").jobs.select_related("profile", "candidate__problem").get()
    command = runner.judge_command(job, tmp_path / "c.py", tmp_path / "o.json")
    assert command[1:5] == ["-m", "evaluator.cli", "eval", "1_allreduce"]
    assert command[command.index("--world-size") + 1] == "8" and command[command.index("--device") + 1] == "cuda"
    assert "--multicast-allowed" in command and "--reduced" not in command
    assert "--pairs" not in command  # one pair unless the profile asks for more
    gpu.timing_pairs = 8
    gpu.save()
    job.profile.refresh_from_db()
    command = runner.judge_command(job, tmp_path / "c.py", tmp_path / "o.json")
    assert command[command.index("--pairs") + 1] == "8"


def _hidden(command: list[str]) -> tuple[bool, str | None]:
    world = command[command.index("--hidden-world-size") + 1] if "--hidden-world-size" in command else None
    return "--hidden-shape" in command, world


def test_ranked_profiles_ask_the_judge_to_draw_the_hidden_world_size(owner, submit, gpu, tmp_path, settings):
    """The site asks for the hidden checks; the judge draws the world size (evaluator/judge/hidden_world.py)."""
    settings.PKB_HIDDEN_CHECKS = True
    job = submit(owner, profile="gpu-h200x8").jobs.select_related("profile", "candidate__problem").get()
    assert _hidden(runner.judge_command(job, tmp_path / "c.py", tmp_path / "o.json")) == (True, "auto")
    request = runner.judge_request(job, tmp_path / "c.py", tmp_path / "o.json")
    assert request.hidden_world_size == JudgeRequest.HIDDEN_WORLD_AUTO == "auto"
    assert JudgeRequest.from_argv(request.argv()) == request
    # A one-GPU profile too: the judge finds no other world size there and runs the hidden shape only.
    gpu.world_size = 1
    gpu.save()
    job = submit(owner, profile="gpu-h200x8").jobs.select_related("profile", "candidate__problem").get()
    assert _hidden(runner.judge_command(job, tmp_path / "c.py", tmp_path / "o.json")) == (True, "auto")


def test_hidden_checks_switch_off_with_the_setting(owner, submit, gpu, tmp_path, settings):
    settings.PKB_HIDDEN_CHECKS = False
    job = submit(owner, profile="gpu-h200x8").jobs.select_related("profile", "candidate__problem").get()
    assert _hidden(runner.judge_command(job, tmp_path / "c.py", tmp_path / "o.json")) == (False, None)


def test_unranked_profiles_get_no_hidden_checks(owner, submit, cpu, tmp_path, settings):
    settings.PKB_HIDDEN_CHECKS = True
    job = submit(owner).jobs.select_related("profile", "candidate__problem").get()
    assert not cpu.ranked
    assert _hidden(runner.judge_command(job, tmp_path / "c.py", tmp_path / "o.json")) == (False, None)
    cpu.ranked = True
    cpu.save()
    job = submit(owner).jobs.select_related("profile", "candidate__problem").get()
    assert _hidden(runner.judge_command(job, tmp_path / "c.py", tmp_path / "o.json")) == (True, "auto")


def test_the_runner_never_imports_the_problems():
    """The site draws no hidden world size, so its job runner needs neither the problems nor torch (the management
    command that loads the catalogue is the site's one importer of ``problems``)."""
    tree = ast.parse(Path(runner.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m.split(".")[0] in ("problems", "torch")}
    leaderboard = Path(runner.__file__).parents[1]
    importers = {
        str(p.relative_to(leaderboard))
        for p in leaderboard.rglob("*.py")
        if re.search(r"^\s*(import problems|from problems)", p.read_text(), re.M)
    }
    assert importers == {"management/commands/load_problems.py"}


def test_reaper_thread_runs_its_pass_again_after_a_failure(caplog):
    """One Reaper thread serves the jobs' reaper and the feedback worker's: a failed pass is logged, not fatal."""
    import logging

    from leaderboard.feedback.worker import feedback_reaper

    calls = []

    def reap():
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise RuntimeError("database went away")

    reaper = runner.Reaper(interval=0.01, reap=reap, name="test-reaper", what="test reaper")
    with caplog.at_level(logging.ERROR):
        reaper.start()
        deadline = time.monotonic() + 10
        while len(calls) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        reaper.stop()
        reaper.join(5)
    assert len(calls) >= 3 and not reaper.is_alive()
    assert "test reaper pass failed" in caplog.text
    feedback = feedback_reaper()
    assert feedback.name == "pkb-feedback-reaper" and feedback.log.name == "leaderboard.feedback"


def test_the_runner_builds_a_judge_request_not_an_argv(owner, submit, gpu, cpu, settings, tmp_path):
    """leaderboard/jobs/runner.py asks the judge through the contract (evaluator/contract/requests.py): a JudgeRequest
    whose command is the only command line of the job."""
    settings.PKB_SANDBOX_OFF = False
    job = submit(owner, profile="gpu-h200x8").jobs.get()
    request = runner.judge_request(job, tmp_path / "c.py", tmp_path / "o.json")
    assert isinstance(request, JudgeRequest)
    assert (request.problem, request.world_size, request.device, request.trials) == (
        "1_allreduce",
        8,
        "cuda",
        gpu.trials,
    )
    assert request.sandbox_required and request.multicast_allowed is gpu.multicast_allowed and not request.reduced
    assert request.json_out == str(tmp_path / "o.json") and request.candidate == str(tmp_path / "c.py")
    assert JudgeRequest.from_argv(request.argv()) == request
    dev = runner.judge_request(submit(owner).jobs.get(), tmp_path / "c.py", tmp_path / "o.json")
    assert dev.reduced and dev.device == "cpu" and not dev.hidden_shape and dev.hidden_world_size is None
