"""The job lifecycle end to end, against the real PostgreSQL and a real broker (RabbitMQ, and Redis for the lost-message
case), with real `dramatiq leaderboard.actors` worker processes and the real judge (W = 2, CPU gloo, problem 1).

    worker killed mid-job   -> its judge dies with it, the reaper re-queues, another worker finishes: one result
    broker connections cut  -> publisher and consumer reconnect, the job finishes
    broker lost messages    -> the reaper sees fewer messages than queued jobs and re-sends them
    prefetch                -> a worker's consumer holds one message at a time
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import dramatiq
import pytest
from django.db import connection

from leaderboard import services
from leaderboard.models import EvaluationJob, HardwareProfile, Result
from tests.site.conftest import GOOD_1, meta

pytestmark = pytest.mark.django_db(transaction=True)

RABBIT_URL = os.environ.get("PKB_TEST_RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")
REDIS_URL = os.environ.get("PKB_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
ROOT = Path(__file__).resolve().parents[3]
DRAMATIQ = str(Path(sys.executable).with_name("dramatiq"))


def database_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def make_broker(url: str):
    from leaderboard.env import broker_from_url
    from django.utils.module_loading import import_string

    path, options = broker_from_url(url)
    return import_string(path)(**options)


@pytest.fixture
def profile(catalogue):
    if connection.vendor != "postgresql":
        pytest.skip("the lifecycle tests need PostgreSQL shared with worker processes")
    return HardwareProfile.objects.create(slug=f"it-{uuid.uuid4().hex[:8]}", name="integration", device="cpu",
                                          world_size=2, ranked=False, trials=1, accepting=True)


@pytest.fixture(params=["rabbitmq"])
def broker(request, profile):
    url = RABBIT_URL if request.param == "rabbitmq" else REDIS_URL
    previous = dramatiq.get_broker()
    instance = make_broker(url)
    dramatiq.set_broker(instance)
    instance.url = url
    yield instance
    dramatiq.set_broker(previous)
    try:
        instance.flush(profile.slug)
        if hasattr(instance, "channel"):
            for name in (profile.slug, f"{profile.slug}.DQ", f"{profile.slug}.XQ"):
                instance.channel.queue_delete(name)
    except Exception:
        pass
    instance.close()


class Workers:
    """`dramatiq leaderboard.actors --queues <profile> --processes 1 --threads 1`, as on a GPU host."""

    def __init__(self, broker_url: str, queue: str, tmp: Path):
        self.broker_url, self.queue, self.tmp = broker_url, queue, tmp
        self.procs: list[subprocess.Popen] = []

    def start(self) -> subprocess.Popen:
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
        env.update(DJANGO_SETTINGS_MODULE="leaderboard.settings", DATABASE_URL=database_url(),
                   BROKER_URL=self.broker_url, DJANGO_SECRET_KEY="it", PKB_DATA_DIR=str(self.tmp),
                   PKB_QUEUES=self.queue, PKB_LEASE_SECONDS="6", PKB_HEARTBEAT_SECONDS="1",
                   PKB_REAPER_INTERVAL_SECONDS="1", PKB_REQUEUE_QUEUED_AFTER_SECONDS="2", PYTHONPATH=str(ROOT),
                   PKB_LOG_LEVEL="INFO")
        log = open(self.tmp / f"worker{len(self.procs)}.log", "wb")
        proc = subprocess.Popen([DRAMATIQ, "leaderboard.actors", "--queues", self.queue, "--processes", "1",
                                 "--threads", "1"], cwd=str(ROOT), env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        self.procs.append(proc)
        return proc

    def kill(self, proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)

    def stop_all(self) -> None:
        for proc in self.procs:
            self.kill(proc)

    def logs(self) -> str:
        return "\n".join((p.read_text(errors="replace")[-3000:]) for p in sorted(self.tmp.glob("worker*.log")))


@pytest.fixture
def workers(broker, profile, tmp_path):
    pool = Workers(broker.url, profile.slug, tmp_path)
    yield pool
    pool.stop_all()


def submit_one(owner, profile) -> EvaluationJob:
    submission = services.submission_create(owner.submitter, meta(profile=profile.slug),
                                            [("1_allreduce_torch.py", GOOD_1)])
    return submission.jobs.get()


def wait_for(predicate, timeout: float, what: str, workers: Workers | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{workers.logs() if workers else ''}")


def job_status(job) -> str:
    return EvaluationJob.objects.filter(pk=job.pk).values_list("status", flat=True).get()


def processes_with(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def rabbitmqctl(*args: str) -> str:
    return subprocess.run(["rabbitmqctl", "-q", *args], capture_output=True, text=True, timeout=60).stdout


def assert_evaluated_once(job) -> Result:
    finals = list(Result.objects.filter(job=job).exclude(verdict="infra_error"))
    assert len(finals) == 1, finals
    assert finals[0].verdict == "correct"
    return finals[0]


def test_worker_killed_mid_job_is_evaluated_exactly_once(owner, profile, workers):
    job = submit_one(owner, profile)
    first = workers.start()
    wait_for(lambda: job_status(job) == "running", 120, "the first worker to claim the job", workers)
    judge_marker = f"job{job.pk}-"
    wait_for(lambda: processes_with(judge_marker), 30, "the judge subprocess", workers)
    time.sleep(2)
    workers.kill(first)  # the host dies mid-evaluation
    wait_for(lambda: not processes_with(judge_marker), 30,
             "the orphaned judge to die with its worker")
    assert job_status(job) == "running"  # nobody has written anything
    workers.start()
    wait_for(lambda: job_status(job) == "done", 240, "the second worker to finish the job", workers)
    assert_evaluated_once(job)
    job.refresh_from_db()
    assert job.attempts == 2
    lost = Result.objects.get(job=job, verdict="infra_error")
    assert "lost" in lost.message
    assert job.submission.scores.get(problem_id=1).status == "correct"


def test_broker_connections_dropped_then_the_job_finishes(owner, profile, workers):
    worker = workers.start()
    consumers = wait_for(lambda: [line for line in rabbitmqctl("list_consumers", "queue_name", "prefetch_count")
                                  .splitlines() if line.split("\t")[0] == profile.slug], 60,
                         "the worker's consumer", workers)
    assert consumers[0].split("\t")[1] == "1"  # prefetch 1: a busy host never hoards a second job
    rabbitmqctl("close_all_connections", "pkb-arena test: connection dropped")
    time.sleep(1)
    job = submit_one(owner, profile)  # the publisher reconnects
    wait_for(lambda: job_status(job) == "done", 240, "the job after the reconnect", workers)
    assert worker.poll() is None
    assert_evaluated_once(job)


@pytest.mark.parametrize("broker", ["rabbitmq", "redis"], indirect=True)
def test_messages_the_broker_lost_are_resent_by_the_reaper(owner, profile, broker, workers):
    job = submit_one(owner, profile)
    broker.flush(profile.slug)  # a broker restart without persistence: the message is gone, the row remains
    from leaderboard.broker import queue_depth

    assert queue_depth(profile.slug) == 0 and job_status(job) == "queued"
    workers.start()
    wait_for(lambda: job_status(job) == "done", 240, "the reaper to re-send and a worker to finish", workers)
    assert_evaluated_once(job)
