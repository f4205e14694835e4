"""The site's build stage (leaderboard/jobs/build_stage.py): a file that compiles an extension is built by a build
worker before its judged run, on the profile's build queue, under the job's lease. Real judge subprocesses on the CPU
profile (cpu-gloo, W = 2) with C++ extensions built lazily on CPU (the stage on for CPU profiles: PKB_BUILD_STAGE=all):
the stage builds a file once and its job then compiles nothing; a broken build is the file's compile_error with no
judged run; a kernel that builds only after its first collective is still judged correct; a build worker that dies,
or a stage that fails, never costs the job its judged run."""

from __future__ import annotations

import threading
from pathlib import Path

import dramatiq
import pytest
from dramatiq.brokers.stub import StubBroker

from evaluator.contract.schema import JudgeRequest, PrebuildRequest
from leaderboard.jobs import broker as jobs_broker
from leaderboard.jobs import build_stage, judge_process, lease, runner
from leaderboard.jobs import services as jobs_services
from leaderboard.jobs.models import EvaluationJob, Result
from tests.site.conftest import GOOD_1, GOOD_13, judge_document

ROOT = Path(__file__).resolve().parents[2]
# Extensions of pybind11 alone (a few seconds a build): what is under test is the stage, not the compiler.
CANDIDATES = ROOT / "tests" / "evaluator" / "candidates"
LAZY = (CANDIDATES / "light_cpp_extension.py").read_bytes()
BROKEN = (CANDIDATES / "broken_cpp_extension.py").read_bytes()
LATE = (CANDIDATES / "builds_after_gpu_work.py").read_bytes()
# Plain PyTorch that names a compile call: sent to the stage, judged in seconds (for the lifecycle alone).
NAMES_A_BUILD = GOOD_1 + b"\n# no compile_cuda_extension call: plain torch.distributed\n"
CPP_FILE = "1_allreduce_cpp.py"


def drain(queue: str) -> list[int]:
    """The job ids waiting on a queue of the in-memory broker (taken off it), each message checked to go to the
    actor of its queue: the build stage's on a build queue, the judging one's on a profile's."""
    broker = dramatiq.get_broker()
    broker.declare_queue(queue)
    waiting = broker.queues[queue]
    actor = jobs_broker.BUILD_ACTOR_NAME if queue.startswith("build-") else jobs_broker.ACTOR_NAME
    ids = []
    while not waiting.empty():
        message = waiting.get_nowait()
        message = dramatiq.Message.decode(message) if isinstance(message, bytes) else message
        assert message.actor_name == actor, (queue, message)
        ids.append(message.args[0])
    return ids


@pytest.fixture
def staged(cpu, settings, tmp_path, monkeypatch):
    """The stage on for the CPU profile, one correctness trial, an empty build cache (the judges' HOME), and empty
    queues."""
    settings.PKB_BUILD_STAGE = "all"
    cpu.trials = 1
    cpu.save()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the judge's build cache: ~/.cache/pkb-arena/builds
    drain("cpu-gloo")
    drain("build-cpu-gloo")
    return cpu


def submit_one(submit, owner, capture, name: str, code: bytes) -> EvaluationJob:
    with capture(execute=True):
        return submit(owner, {name: code}).jobs.get()


def build(job: EvaluationJob, capture, worker: str = "build-worker") -> str:
    with capture(execute=True):  # the message to the profile's queue leaves on commit
        return build_stage.run_build(job.pk, worker)


def test_files_that_compile_go_to_the_build_queue_first_and_the_others_straight_to_their_profile(
    owner, submit, staged, settings, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        submission = submit(owner, {CPP_FILE: LAZY, "13_gemm_allreduce_cpp.py": GOOD_13})
    jobs = {j.candidate.problem_id: j for j in submission.jobs.select_related("candidate")}
    assert (jobs[1].build_status, jobs[13].build_status) == ("queued", "skipped")
    assert drain("build-cpu-gloo") == [jobs[1].pk] and drain("cpu-gloo") == [jobs[13].pk]
    settings.PKB_BUILD_STAGE = "cuda"  # the default: GPU profiles only
    job = submit_one(submit, owner, django_capture_on_commit_callbacks, CPP_FILE, LAZY)
    assert job.build_status == "" and drain("cpu-gloo") == [job.pk] and drain("build-cpu-gloo") == []


def test_the_stage_builds_a_file_once_before_its_job_which_then_compiles_nothing(
    owner, submit, staged, django_capture_on_commit_callbacks
):
    job = submit_one(submit, owner, django_capture_on_commit_callbacks, CPP_FILE, LAZY)
    assert build(job, django_capture_on_commit_callbacks) == "built"
    job.refresh_from_db()
    assert (job.status, job.build_status, job.attempts) == ("queued", "built", 0)  # a build is no judging attempt
    assert job.build_report["build"]["compiled"] == 1 and job.build_report["target_device"] == "cpu"
    assert drain("cpu-gloo") == [job.pk]
    assert runner.run_job(job.pk, "judging-worker") == "done"
    result = Result.objects.get(job=job)
    assert result.verdict == "correct" and result.claim == 1, result.message
    # The judge's own report of the job's builds: the stage's entry restored, both ranks loaded it, none compiled.
    assert result.document["build"]["from_cache"] is True
    assert result.document["build"]["compiled"] == 0 and result.document["build"]["loaded_built"] == 2
    assert build_stage.run_build(job.pk, "build-worker") == "not_claimed"  # built once


def test_a_broken_build_is_the_files_compile_error_without_a_judged_run(
    owner, submit, staged, monkeypatch, django_capture_on_commit_callbacks
):
    judged = []
    command = JudgeRequest.command
    monkeypatch.setattr(JudgeRequest, "command", lambda request: judged.append(request) or command(request))
    job = submit_one(submit, owner, django_capture_on_commit_callbacks, CPP_FILE, BROKEN)
    assert build(job, django_capture_on_commit_callbacks) == "compile_error"
    job.refresh_from_db()
    assert (job.status, job.build_status) == ("done", "compile_error")
    result = Result.objects.get(job=job)
    assert result.verdict == "compile_error" and result.worker == "build-worker" and result.is_final
    assert result.gpu_seconds == 0 and result.wall_s is None  # no device held
    assert result.document["build_stage"]["status"] == "compile_error"
    assert "this_method_does_not_exist" in result.message + str(result.document["logs"]), result.message
    # No judged run: nothing sent to the profile's queue, no eval command built, and none can claim the job now.
    assert drain("cpu-gloo") == [] and runner.run_job(job.pk, "judging-worker") == "not_claimed" and judged == []
    assert job.submission.scores.get(problem_id=1).status != "pending"


def test_a_kernel_that_builds_only_after_its_first_collective_is_still_judged_correct(
    owner, submit, staged, django_capture_on_commit_callbacks
):
    job = submit_one(submit, owner, django_capture_on_commit_callbacks, CPP_FILE, LATE)
    assert build(job, django_capture_on_commit_callbacks) == "unreached"
    job.refresh_from_db()
    assert job.status == "queued" and "needs its GPU" in job.build_report["message"]
    assert runner.run_job(job.pk, "judging-worker") == "done"
    result = Result.objects.get(job=job)
    assert result.verdict == "correct", result.message
    assert result.document["build"]["from_cache"] is False and result.document["build"]["compiled"] == 1


def test_a_build_worker_that_dies_mid_build_leaves_the_job_to_its_judged_run(
    owner, submit, staged, django_capture_on_commit_callbacks
):
    job = submit_one(submit, owner, django_capture_on_commit_callbacks, CPP_FILE, NAMES_A_BUILD)
    assert drain("build-cpu-gloo") == [job.pk]
    assert jobs_services.job_build_claim(job.pk, "dead-build-worker") is not None  # then it dies, lease held
    with django_capture_on_commit_callbacks(execute=True):
        assert lease.release_leases_of("dead-build-worker") == 1  # what the host's next worker does at boot
    job.refresh_from_db()
    assert (job.status, job.build_status, job.attempts) == ("queued", "infra_error", 0)
    assert drain("cpu-gloo") == [job.pk] and not Result.objects.filter(job=job).exists()  # nothing scored
    assert jobs_services.job_build_claim(job.pk, "another-build-worker") is None  # never built twice
    assert runner.run_job(job.pk, "judging-worker") == "done"
    assert Result.objects.get(job=job).verdict == "correct"


def test_a_stage_that_fails_leaves_the_job_to_its_judged_run(
    owner, submit, staged, monkeypatch, django_capture_on_commit_callbacks
):
    job = submit_one(submit, owner, django_capture_on_commit_callbacks, CPP_FILE, NAMES_A_BUILD)
    real = PrebuildRequest.command
    monkeypatch.setattr(PrebuildRequest, "command", lambda request: [*real(request)[:1], "-c", "raise SystemExit(3)"])
    assert build(job, django_capture_on_commit_callbacks) == "infra_error"
    job.refresh_from_db()
    assert job.status == "queued" and "exited with status 3" in job.build_report["message"]
    assert drain("cpu-gloo") == [job.pk] and not Result.objects.filter(job=job).exists()
    assert runner.run_job(job.pk, "judging-worker") == "done"
    assert Result.objects.get(job=job).verdict == "correct"


def test_a_rerun_goes_through_the_stage_again(owner, submit, staged, django_capture_on_commit_callbacks):
    job = submit_one(submit, owner, django_capture_on_commit_callbacks, CPP_FILE, BROKEN)
    drain("build-cpu-gloo")
    jobs_services.job_build_claim(job.pk, "build-worker")
    jobs_services.job_build_failed(job.pk, "build-worker", judge_document("compile_error"), {"status": "compile_error"})
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs_services.jobs_rerun([job], charge_to=None) == 1
    job.refresh_from_db()
    assert (job.run, job.status, job.build_status, job.build_report) == (2, "queued", "queued", {})
    assert drain("build-cpu-gloo") == [job.pk] and drain("cpu-gloo") == []


def test_the_stage_builds_for_the_architecture_of_the_workers_judged_jobs(
    owner, submit, staged, settings, monkeypatch, tmp_path, django_capture_on_commit_callbacks
):
    """TORCH_CUDA_ARCH_LIST is part of every build's fingerprint: the stage's and the judged runs' must be one."""
    job = submit_one(submit, owner, django_capture_on_commit_callbacks, CPP_FILE, LAZY)
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST", raising=False)  # restored after the test
    settings.PKB_BUILD_ARCH = "9.0"
    build_stage.export_build_arch()  # at the worker's boot
    request = build_stage.prebuild_request(job, tmp_path / "c.py", tmp_path / "o.json")
    assert request.arch == "9.0" == judge_process.judge_env(tmp_path)["TORCH_CUDA_ARCH_LIST"]
    assert request.target_device == "cpu" and request.max_jobs == settings.PKB_BUILD_MAX_JOBS and request.nice > 0


@pytest.mark.parametrize("queues, prefetch", [({"build-cpu-gloo"}, 3), ({"build-cpu-gloo", "cpu-gloo"}, 1)])
def test_a_build_worker_takes_a_message_per_thread_and_a_judging_worker_one(queues, prefetch):
    broker = StubBroker()
    broker.add_middleware(jobs_broker.OneMessageAtATime())
    broker.add_middleware(build_stage.BuildPrefetch())
    worker = dramatiq.Worker(broker, queues=queues, worker_threads=3, worker_timeout=100)
    broker.emit_before("worker_boot", worker)
    assert worker.queue_prefetch == prefetch


def test_the_embedded_worker_builds_for_the_profiles_the_stage_applies_to(staged, settings):
    assert build_stage.embedded_build_queues(["cpu-gloo", "feedback-cpu-gloo"]) == ["build-cpu-gloo"]
    settings.PKB_BUILD_STAGE = "cuda"
    assert build_stage.embedded_build_queues(["cpu-gloo"]) == []


def test_the_embedded_build_threads_run_each_build_message_once(monkeypatch):
    built, done = [], threading.Event()
    monkeypatch.setattr(build_stage, "run_build", lambda job_id: built.append(job_id) or done.set() or "built")
    threads = build_stage.BuildThreads(["build-embedded-test"], per_queue=2)
    threads.start()
    try:
        jobs_services.BUILD_LEASE.send_quietly(41, "build-embedded-test")
        assert done.wait(10)
    finally:
        threads.stop()
    assert built == [41] and not any(t.is_alive() for t in threads.threads)
