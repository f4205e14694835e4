"""The build stage's worker: a job's extensions built on CPU cores before its judged run takes the GPUs.

A file that compiles an extension (leaderboard/jobs/build_routing.py says which) is sent to its profile's build queue
(``build-<profile>``) first. A build worker claims the job by the same lease as a judged run (leaderboard/jobs/
services.py, job_build_claim), runs the judge's build stage in a subprocess (``python -m evaluator.cli prebuild``:
the candidate's first call, in the sandbox, with no GPU visible; evaluator/judge/prebuild.py) while heartbeats renew
the lease, and then:

- ``compile_error``: the file's result, stored as a judged run's is, and the job never takes a GPU;
- ``built``, ``nothing_built``, ``unreached``, or the stage failed (``infra_error``: a crash, a timeout, no sandbox):
  the job goes on to its profile's queue. Its job loads what the stage built from the judge's build cache and builds
  anything else itself, as without a stage: nothing can become wrong because of it, and a failure of the stage is
  never scored. A build worker that dies mid-build leaves a lease that the reaper ends the same way.

Builds run in parallel, bounded: ``PKB_BUILD_WORKERS`` threads per build worker, ``PKB_BUILD_MAX_JOBS`` compile
processes per build, at a lower CPU priority than the judged jobs' ranks. A build worker consumes build queues only
(a worker that judges keeps one message at a time):

    dramatiq leaderboard.jobs.build_stage --queues build-gpu-h200x1 --processes 1 --threads 4

and ``manage.py runserver_with_worker`` starts build threads beside its judging worker when the stage applies to its
profile (:class:`BuildThreads`).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
import time
from pathlib import Path

import dramatiq
from django.conf import settings
from django.db import connection
from dramatiq.middleware import Middleware

from evaluator.contract.schema import COMPILE_ERROR, PrebuildRequest
from leaderboard.jobs import (
    actors,  # noqa: F401  (the jobs' part of a worker: the reaper, recovery at boot)
    build_routing,
    judge_process,
    judge_requests,
    workspace,
)
from leaderboard.jobs import services as jobs_services
from leaderboard.jobs import worker_boot as bootstrap  # sets Django up when the dramatiq CLI imports this first
from leaderboard.jobs.broker import BUILD_ACTOR_NAME
from leaderboard.jobs.judge_process import WORKER_ID, close_old_connections
from leaderboard.jobs.models import EvaluationJob

log = logging.getLogger("leaderboard.jobs.build_stage")
TAIL = 8000
# The stage's judge and everything it starts (ranks, compilers) yield the CPU to the judged jobs' ranks.
NICE = 10
# What the stage may answer and the job then goes on with (a compile_error ends the job instead).
PASSED_ON = (EvaluationJob.BUILT, EvaluationJob.NOTHING_BUILT, EvaluationJob.UNREACHED, EvaluationJob.BUILD_INFRA_ERROR)
# Beyond the stage's own time limits (its start and its first call, each up to half the budget): its teardown.
SLACK_S = 60


@dramatiq.actor(actor_name=BUILD_ACTOR_NAME, queue_name="default")
def build_job(job_id: int) -> None:
    outcome = run_build(int(job_id))
    log.info("job %s: build stage: %s", job_id, outcome)


def run_build(job_id: int, worker: str = WORKER_ID) -> str:
    """Build one job's file if this worker can claim it. Returns what happened: the build status it recorded,
    ``not_claimed`` or ``lease_lost``."""
    job = jobs_services.job_build_claim(job_id, worker)
    if job is None:
        return "not_claimed"
    workdir = Path(tempfile.mkdtemp(prefix=f"build{job.pk}-", dir=judge_process.work_root()))
    try:
        report = _stage(job, workdir, worker)
        close_old_connections()
        if report is None:
            return "lease_lost"
        document = report.pop("result", None)
        if report["status"] == COMPILE_ERROR:
            if isinstance(document, dict) and document.get("verdict") == COMPILE_ERROR:
                stored = jobs_services.job_build_failed(job.pk, worker, document, report)
                return COMPILE_ERROR if stored is not None else "lease_lost"
            report = _infra_report("the build stage said compile_error without the file's result", report)
        passed = jobs_services.job_build_passed_on(job.pk, worker, report["status"], report)
        return report["status"] if passed else "lease_lost"
    finally:
        workspace.remove(workdir)  # whatever the candidate's build left there (the runner's own rule)


def prebuild_request(job, candidate_path: Path, out_path: Path) -> PrebuildRequest:
    """What the judge's build stage is asked for this job (evaluator/contract/requests.py): builds for the profile's
    device, in the whole sandbox (as its judged run), bounded in compile processes, for the judged run's
    architecture."""
    fields = judge_requests.profile_fields(job.profile)  # what its judged run's request takes of the profile
    return PrebuildRequest(
        job.candidate.problem.stem,
        str(candidate_path),
        target_device=fields["device"],
        json_out=str(out_path),
        sandbox_required=fields["sandbox_required"],
        timeout_s=settings.PKB_BUILD_TIMEOUT_SECONDS / 2,
        arch=settings.PKB_BUILD_ARCH or None,
        max_jobs=settings.PKB_BUILD_MAX_JOBS,
        nice=NICE,
    )


def _stage(job, workdir: Path, worker: str) -> dict | None:
    """The stage's report, or an infra_error report when it failed; None when the lease was lost."""
    path = workdir / Path(job.candidate.filename).name
    path.write_text(job.candidate.code, encoding="utf-8")
    out = workdir / "prebuild.json"
    request = prebuild_request(job, path, out)
    heartbeat = lambda: jobs_services.job_heartbeat(job.pk, worker)  # noqa: E731
    deadline = time.monotonic() + settings.PKB_BUILD_TIMEOUT_SECONDS + SLACK_S
    outcome, returncode = judge_process.supervise(
        request.command(), workdir, heartbeat, deadline, f"build of job {job.pk}"
    )
    tail = (workdir / "judge.log").read_bytes()[-TAIL:].decode("utf-8", "replace")
    if outcome == "lease_lost":
        return None
    if outcome == "timeout":
        return _infra_report(f"the build stage exceeded {settings.PKB_BUILD_TIMEOUT_SECONDS} s", tail=tail)
    if returncode != 0:
        return _infra_report(f"the build stage exited with status {returncode}", tail=tail)
    try:
        report = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return _infra_report(f"the build stage wrote no readable report: {exc}", tail=tail)
    if not isinstance(report, dict) or report.get("status") not in (*PASSED_ON, COMPILE_ERROR):
        return _infra_report("the build stage's report has no known status", tail=tail)
    return report


def _infra_report(message: str, report: dict | None = None, tail: str = "") -> dict:
    return dict(report or {}, status=EvaluationJob.BUILD_INFRA_ERROR, message=message, log_tail=tail[-2000:])


# --- the worker: its queues, its threads, its boot ------------------------------------------------------------------


class BuildPrefetch(Middleware):
    """A build worker's threads each take a message of their own: a worker that consumes build queues only gets a
    prefetch of its thread count, instead of the one message at a time of a judging worker
    (leaderboard/jobs/broker.py, OneMessageAtATime, which runs before this one)."""

    def before_worker_boot(self, broker, worker):
        queues = worker.consumer_whitelist or set()
        if queues and all(build_routing.is_build_queue(q) for q in queues):
            worker.queue_prefetch = max(1, worker.worker_threads)


def declare_build_queues(broker=None) -> list[str]:
    """Declare every profile's build queue, so that ``--queues build-<profile>`` finds a consumer to start."""
    from leaderboard.catalogue.models import HardwareProfile

    broker = broker or dramatiq.get_broker()
    if not any(isinstance(m, BuildPrefetch) for m in broker.middleware):
        broker.add_middleware(BuildPrefetch())
    try:
        names = [build_routing.build_queue(p) for p in HardwareProfile.objects.all()]
    except Exception:  # noqa: BLE001 - no database yet (before migrate), none reachable, or none allowed (a test's guard)
        log.warning("could not read hardware profiles; no build queue declared")
        names = []
    for name in names:
        broker.declare_queue(name)
    return names


def export_build_arch() -> None:
    """This worker's judged jobs build for the same architecture as its builds: TORCH_CUDA_ARCH_LIST is part of every
    build's fingerprint, and the judge inherits the worker's TORCH_* variables (judge_process.judge_env). Without it
    a job would find the stage's build in the cache and compile again."""
    if settings.PKB_BUILD_ARCH:
        os.environ["TORCH_CUDA_ARCH_LIST"] = settings.PKB_BUILD_ARCH


def embedded_build_queues(queues) -> list[str]:
    """The build queues of the profiles among ``queues`` that the stage applies to."""
    from leaderboard.catalogue.models import HardwareProfile

    profiles = HardwareProfile.objects.filter(slug__in=list(queues))
    return [build_routing.build_queue(p) for p in profiles if build_routing.stage_applies(p)]


def start_embedded(queues) -> BuildThreads | None:
    """``runserver_with_worker``: build threads of its own (PKB_BUILD_WORKERS) beside the judging worker, for the
    profiles among ``queues`` that the stage applies to; None when it applies to none."""
    names = embedded_build_queues(queues)
    if not names:
        return None
    export_build_arch()
    threads = BuildThreads(names, settings.PKB_BUILD_WORKERS)
    threads.start()
    log.info("build stage: %s with %s threads", ", ".join(names), settings.PKB_BUILD_WORKERS)
    # The in-memory broker starts empty: the jobs still waiting for their builds are sent again (the profile's queue
    # has them too, from the start-up re-send: whichever worker claims one first has it).
    waiting = EvaluationJob.objects.filter(
        status=EvaluationJob.QUEUED, build_status=EvaluationJob.BUILD_QUEUED, profile__slug__in=list(queues)
    ).select_related("profile")
    for job in waiting:
        jobs_services.BUILD_LEASE.send_quietly(job.pk, build_routing.build_queue(job.profile))
    return threads


class BuildThreads:
    """The embedded server's build worker: threads that each take one message at a time from a build queue and run
    its build. Not a second dramatiq Worker: the process's one Worker has already passed the sandbox gate, locked its
    GPUs and started the reaper at its boot, and a second boot would do all of that again (and find its own GPUs
    locked)."""

    IDLE_MS = 1000  # how long a thread waits for a message before it looks whether it should stop

    def __init__(self, queues: list[str], per_queue: int):
        self.queues = list(queues)
        self.stopping = threading.Event()
        self.threads = [
            threading.Thread(target=self._consume, args=(queue,), name=f"pkb-build-{queue}-{i}", daemon=True)
            for queue in self.queues
            for i in range(max(1, per_queue))
        ]

    def start(self) -> None:
        broker = dramatiq.get_broker()
        for queue in self.queues:
            broker.declare_queue(queue)
        for thread in self.threads:
            thread.start()

    def stop(self, timeout: int = 5000) -> None:
        """Stop taking messages; a build under way ends with the process (its lease then runs out: the reaper sends
        its job on)."""
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout / 1000)

    def _consume(self, queue: str) -> None:
        consumer = dramatiq.get_broker().consume(queue, prefetch=1, timeout=self.IDLE_MS)
        try:
            while not self.stopping.is_set():
                message = next(consumer)
                if message is None:
                    continue
                try:
                    if message.actor_name == BUILD_ACTOR_NAME:
                        log.info("job %s: build stage: %s", message.args[0], run_build(int(message.args[0])))
                except Exception:
                    log.exception("build of job %s failed", message.args[:1])
                finally:
                    consumer.ack(message)
                    close_old_connections()
        finally:
            consumer.close()
            connection.close()


if os.environ.get("PKB_ACTORS_NO_SETUP") != "1":
    bootstrap.boot("build", declare=declare_build_queues, on_boot=export_build_arch)
