"""leaderboard/jobs/judge_service.py + evaluator/serve.py: one long-lived judge with warm spares per worker thread (CPU
gloo, W = 2, problem 1). Jobs run back to back in it; a bad job, an overrun or a lost lease never spoils the next
one."""

import json
import pathlib
import time

import pytest

from evaluator.contract.schema import JudgeRequest
from leaderboard.jobs import judge_service, runner
from leaderboard.jobs.models import Result

CANDIDATES = pathlib.Path(__file__).resolve().parent.parent / "evaluator" / "candidates"


def eval_argv(candidate: str, out: pathlib.Path, *extra: str) -> JudgeRequest:
    """The request (evaluator/contract/requests.py) that this eval command line says."""
    return JudgeRequest.from_argv(
        [
            "eval",
            "1",
            candidate,
            "--world-size",
            "2",
            "--device",
            "cpu",
            "--trials",
            "1",
            "--reduced",
            "--json",
            str(out),
            *extra,
        ]
    )


@pytest.fixture
def service(settings, tmp_path, db):  # the watch loop closes stale database connections between waits
    settings.PKB_WORK_DIR = tmp_path / "work"
    settings.PKB_HEARTBEAT_SECONDS = 1
    service = judge_service.JudgeService(2, "cpu", 1)
    yield service
    service.stop()


def job_dir(tmp_path, name: str) -> pathlib.Path:
    path = tmp_path / name
    path.mkdir()
    return path


def run(service, argv, workdir, deadline_s: float = 300, heartbeat=lambda: True):
    return service.run(argv, workdir, heartbeat, time.monotonic() + deadline_s, "test")


def serve_line(service, request: dict) -> int:
    """Write one raw line to the running judge (what JudgeService.run writes for a request) and read its status."""
    service.seq += 1
    service.process.stdin.write((json.dumps({"id": service.seq, **request}) + "\n").encode())
    service.process.stdin.flush()
    status = None
    while status is None:
        status = service._wait(60)
    return status


def test_jobs_run_back_to_back_on_warm_spares_in_one_judge(service, tmp_path):
    pids, documents = [], []
    for name, candidate in (("a", "reference"), ("b", str(CANDIDATES / "allreduce_wrong.py"))):
        workdir = job_dir(tmp_path, name)
        assert run(service, eval_argv(candidate, workdir / "r.json"), workdir) == ("exited", 0)
        documents.append(json.loads((workdir / "r.json").read_text()))
        assert "verdict:" in (workdir / "judge.log").read_text()  # this job's own log
        pids.append(service.process.pid)
    assert [d["verdict"] for d in documents] == ["correct", "incorrect"]
    assert all(d["environment"]["warm_start"] for d in documents)
    assert pids[0] == pids[1]  # the same judge: its pool had the second job's groups ready
    directory = service.directory
    service.stop()
    assert not directory.exists()


def test_refused_arguments_exit_2_and_the_judge_goes_on(service, tmp_path):
    bad = job_dir(tmp_path, "bad")
    assert run(service, eval_argv("reference", bad / "r.json", "--hidden-world-size", "2"), bad) == ("exited", 2)
    assert "world size of the run itself" in (bad / "judge.log").read_text()
    pid = service.process.pid
    not_eval = job_dir(tmp_path, "other")
    assert serve_line(service, {"argv": ["problems", "list"], "log": str(not_eval / "judge.log")}) == 2  # eval only
    assert "only eval commands" in (not_eval / "judge.log").read_text()
    good = job_dir(tmp_path, "good")
    assert run(service, eval_argv("reference", good / "r.json"), good) == ("exited", 0)
    assert service.process.pid == pid


def test_an_overrun_kills_the_judge_and_the_next_job_gets_a_new_one(service, tmp_path):
    hang = job_dir(tmp_path, "hang")
    argv = eval_argv(str(CANDIDATES / "allreduce_deadlock.py"), hang / "r.json", "--timeout", "600")
    started = time.monotonic()
    outcome, status = run(service, argv, hang, deadline_s=3)
    assert outcome == "timeout" and status != 0 and time.monotonic() - started < 30
    assert service.process is None and not (hang / "r.json").exists()
    good = job_dir(tmp_path, "good")
    assert run(service, eval_argv("reference", good / "r.json"), good) == ("exited", 0)


def test_a_lost_lease_kills_the_judge(service, tmp_path):
    hang = job_dir(tmp_path, "hang")
    argv = eval_argv(str(CANDIDATES / "allreduce_deadlock.py"), hang / "r.json", "--timeout", "600")
    assert run(service, argv, hang, heartbeat=lambda: False)[0] == "lease_lost"
    assert service.process is None


def test_a_judge_that_died_between_jobs_is_started_again(service, tmp_path):
    first = job_dir(tmp_path, "first")
    assert run(service, eval_argv("reference", first / "r.json"), first) == ("exited", 0)
    service.process.kill()
    service.process.wait()
    second = job_dir(tmp_path, "second")
    assert run(service, eval_argv("reference", second / "r.json"), second) == ("exited", 0)


def test_the_worker_uses_the_warm_judge_when_the_setting_asks(owner, submit, cpu, settings, tmp_path):
    settings.PKB_WARM_SPARES = 1
    settings.PKB_WORK_DIR = tmp_path / "work"
    cpu.trials = 1
    cpu.save()
    job = submit(owner).jobs.get()
    try:
        assert runner.run_job(job.pk, "warm-worker") == "done"
    finally:
        judge_service.for_thread(cpu.world_size, cpu.device, 1).stop()
    result = Result.objects.get(job=job)
    assert result.verdict == "correct" and result.document["environment"]["warm_start"] is True
