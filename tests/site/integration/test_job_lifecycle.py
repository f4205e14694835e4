"""The job lifecycle end to end, against the real PostgreSQL and a real broker (RabbitMQ, and Redis for the lost-message
case), with real `dramatiq leaderboard.jobs.actors` worker processes and the real judge (W = 2, CPU gloo, problem 1).

    worker killed mid-job   -> its judge dies with it, the reaper re-queues, another worker finishes: one result
    worker child killed     -> no rank process and no scratch left; a restarted worker re-queues the job at boot
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

from leaderboard.catalogue.models import HardwareProfile
from leaderboard.jobs.models import EvaluationJob, Result
from leaderboard.submissions import services as submissions_services
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
    from django.utils.module_loading import import_string

    from leaderboard.env import broker_from_url

    path, options = broker_from_url(url)
    return import_string(path)(**options)


@pytest.fixture
def profile(catalogue):
    if connection.vendor != "postgresql":
        pytest.skip("the lifecycle tests need PostgreSQL shared with worker processes")
    return HardwareProfile.objects.create(
        slug=f"it-{uuid.uuid4().hex[:8]}",
        name="integration",
        device="cpu",
        world_size=2,
        ranked=False,
        trials=1,
        accepting=True,
    )


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
    except Exception:  # noqa: BLE001 - best-effort cleanup: the broker may be gone, the test has its verdict
        pass
    instance.close()


class Workers:
    """`dramatiq leaderboard.jobs.actors --queues <profile> --processes 1 --threads 1`, as on a GPU host."""

    def __init__(self, broker_url: str, queue: str, tmp: Path):
        self.broker_url, self.queue, self.tmp = broker_url, queue, tmp
        self.procs: list[subprocess.Popen] = []

    def start(self, **extra_env: str) -> subprocess.Popen:
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
        env.update(
            DJANGO_SETTINGS_MODULE="leaderboard.settings",
            DATABASE_URL=database_url(),
            BROKER_URL=self.broker_url,
            DJANGO_SECRET_KEY="it",
            PKB_DATA_DIR=str(self.tmp),
            PKB_QUEUES=self.queue,
            PKB_LEASE_SECONDS="6",
            PKB_HEARTBEAT_SECONDS="1",
            PKB_REAPER_INTERVAL_SECONDS="1",
            PKB_REQUEUE_QUEUED_AFTER_SECONDS="2",
            PYTHONPATH=str(ROOT),
            PKB_LOG_LEVEL="INFO",
        )
        env.update(extra_env)
        log = open(self.tmp / f"worker{len(self.procs)}.log", "wb")
        proc = subprocess.Popen(
            [DRAMATIQ, "leaderboard.jobs.actors", "--queues", self.queue, "--processes", "1", "--threads", "1"],
            cwd=str(ROOT),
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
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
    submission = submissions_services.submission_create(
        owner.submitter, meta(profile=profile.slug), [("1_allreduce_torch.py", GOOD_1)], allow_duplicate=True
    )  # several a test
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
    wait_for(lambda: not processes_with(judge_marker), 30, "the orphaned judge to die with its worker")
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
    consumers = wait_for(
        lambda: [
            line
            for line in rabbitmqctl("list_consumers", "queue_name", "prefetch_count").splitlines()
            if line.split("\t")[0] == profile.slug
        ],
        60,
        "the worker's consumer",
        workers,
    )
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
    from leaderboard.jobs.broker import queue_depth

    assert queue_depth(profile.slug) == 0 and job_status(job) == "queued"
    workers.start()
    wait_for(lambda: job_status(job) == "done", 240, "the reaper to re-send and a worker to finish", workers)
    assert_evaluated_once(job)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                pass
    return found


def _with_scratch_under(root: Path) -> list[int]:
    """Processes whose environment has PKB_SCRATCH below ``root``: every rank, reference and candidate."""
    needle = b"PKB_SCRATCH=" + str(root).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if any(item.startswith(needle) for item in (entry / "environ").read_bytes().split(b"\0")):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def _uid_of(pid: int) -> int | None:
    try:
        return int((Path("/proc") / str(pid) / "status").read_text().split("Uid:")[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


@pytest.mark.skipif(os.geteuid() != 0, reason="reading other processes' environments needs root (CI is root)")
def test_worker_child_killed_leaves_nothing_and_a_restarted_worker_requeues_at_once(owner, profile, workers, tmp_path):
    from evaluator.process import processes

    # The candidate sleeps while loading, so every rank (reference and candidate) is alive when the worker dies.
    slow = b"import time\ntime.sleep(120)\n" + GOOD_1
    submission = submissions_services.submission_create(
        owner.submitter, meta(profile=profile.slug), [("1_allreduce_torch.py", slow)]
    )
    job = submission.jobs.get()
    # A lease far longer than the test waits: only the restarted worker's sweep can re-queue the job in time.
    lease = dict(PKB_LEASE_SECONDS="600", PKB_HEARTBEAT_SECONDS="1")
    parent = workers.start(**lease)
    work = tmp_path / "work"
    ranks = wait_for(
        lambda: len(_with_scratch_under(work)) >= 4 and _with_scratch_under(work),
        120,
        "the job's reference and candidate ranks",
        workers,
    )
    uids = {_uid_of(pid) for pid in ranks} - {0, None}
    assert uids and all(processes.UID_RANGE[0] <= u < processes.UID_RANGE[1] for u in uids)
    dead = [p for p in work.iterdir() if p.is_dir()]
    assert len(dead) == 1
    child = wait_for(lambda: _children(parent.pid), 10, "the dramatiq worker child")[0]
    os.kill(child, signal.SIGKILL)  # the worker process dies mid-job, no clean-up runs
    wait_for(lambda: not _with_scratch_under(work), 30, "every rank to die with the worker")
    assert all(not processes.processes_of(u) for u in uids)
    try:  # the supervisor's part: the parent is gone or stopped, and a new worker starts
        parent.wait(timeout=20)
    except subprocess.TimeoutExpired:
        workers.kill(parent)
    assert job_status(job) == "running" and dead[0].exists()  # nobody has cleaned up yet
    restarted = time.monotonic()
    workers.start(**lease)
    wait_for(lambda: not dead[0].exists(), 60, "the restarted worker to sweep the dead one's directory", workers)
    wait_for(
        lambda: EvaluationJob.objects.filter(pk=job.pk, attempts=2).exists(),
        60,
        "the restarted worker to re-claim the job",
        workers,
    )
    reclaimed_s = time.monotonic() - restarted
    assert reclaimed_s < 60  # not the 600 s lease
    print(f"job re-claimed {reclaimed_s:.1f} s after the replacement worker started")
    lost = Result.objects.get(job=job, verdict="infra_error")
    assert "lost" in lost.message
