"""Writes of evaluation jobs: creation, their lease lifecycle on workers (the engine: leaderboard/jobs/lease.py),
the judge's documents stored as results, re-runs, and the build stage's claim and outcome
(leaderboard/jobs/build_stage.py)."""

from __future__ import annotations

import logging
import math
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from evaluator.contract.schema import INFRA_ERROR
from leaderboard.accounts.models import QuotaCharge, Submitter
from leaderboard.accounts.services import quota_refund, quota_reserve
from leaderboard.jobs import build_routing
from leaderboard.jobs.broker import ACTOR_NAME, BUILD_ACTOR_NAME
from leaderboard.jobs.lease import Lease
from leaderboard.jobs.models import EvaluationJob, Result
from leaderboard.jobs.signals import results_changed

log = logging.getLogger("leaderboard.jobs.services")
QUEUED, RUNNING, DONE, FAILED = (EvaluationJob.QUEUED, EvaluationJob.RUNNING, EvaluationJob.DONE, EvaluationJob.FAILED)
LEASE = Lease(
    EvaluationJob,
    ACTOR_NAME,
    lambda profile: profile.queue_name,
    "job",
    claim_related=("candidate__problem", "profile", "submission"),
    logger=log,
)
# The same rows' messages to the build stage's actor, on the profiles' build queues (its claim: job_build_claim).
BUILD_LEASE = Lease(
    EvaluationJob,
    BUILD_ACTOR_NAME,
    build_routing.build_queue,
    "job build",
    claim_related=LEASE.claim_related,
    logger=log,
)


def jobs_create(submission, candidates: list, queue: str) -> list[EvaluationJob]:
    """One job per candidate (of ``submission``), in the caller's transaction; each message leaves when it commits,
    on ``queue`` (the profile's), or on the profile's build queue for a file that the build stage takes first."""
    now = timezone.now()
    profile = submission.profile
    jobs = EvaluationJob.objects.bulk_create(
        [
            EvaluationJob(
                candidate=c,
                profile_id=submission.profile_id,
                submission=submission,
                submitter_id=submission.submitter_id,
                max_attempts=settings.PKB_JOB_MAX_ATTEMPTS,
                enqueued_at=now,
                build_status=build_routing.first_build_status(profile, c.code),
            )
            for c in candidates
        ]
    )
    if jobs and jobs[0].pk is None:  # backends that cannot return ids from bulk inserts
        jobs = list(EvaluationJob.objects.filter(submission=submission, candidate__in=candidates))
    for job in jobs:
        _send_first(job, profile, queue)
    return jobs


def _send_first(job: EvaluationJob, profile, queue: str) -> None:
    """A new run's message: to the build stage while the job waits for its build, else to ``queue``."""
    if job.build_status == EvaluationJob.BUILD_QUEUED:
        BUILD_LEASE.send_on_commit(job.pk, build_routing.build_queue(profile))
    else:
        LEASE.send_on_commit(job.pk, queue)


# --- on workers: claim, heartbeat, finish, infra failure ------------------------------------------------------------


def job_claim(job_id: int, worker: str, now=None) -> EvaluationJob | None:
    """Take a queued job (compare-and-swap); None if another worker has it, it is finished, or its retries are
    spent."""
    return LEASE.claim(job_id, worker, now)


def job_heartbeat(job_id: int, worker: str) -> bool:
    """Extend the lease; False when the lease is no longer ours (the worker must stop and write nothing)."""
    return LEASE.heartbeat(job_id, worker)


def job_finish(job_id: int, worker: str, document: dict) -> Result | None:
    """Store the judge's document for the worker that holds the lease; idempotent, exactly one final result a run."""
    with transaction.atomic():
        job = LEASE.held(job_id, worker, related=("profile",))
        if job is None:
            return None
        if document.get("verdict") == INFRA_ERROR:
            return _job_infra_failure(job, document, worker)[0]
        result = _result_append(job, document, worker)
        if result is None:  # a final result for this run exists already: the job is done
            log.warning("job %s run %s: duplicate final result from %s ignored", job.pk, job.run, worker)
        LEASE.done(job)
        _after_result(job)
        return result


def job_infra_error(job_id: int, worker: str, message: str, logs: list | None = None) -> Result | None:
    """The judge did not produce a document (crash, bad exit status, unreadable JSON): never scored."""
    return job_finish(job_id, worker, _infra_document(message, logs))


def _infra_document(message: str, logs: list | None = None) -> dict:
    return {"verdict": INFRA_ERROR, "message": message, "flags": [], "logs": logs or [], "environment": {}}


def _job_infra_failure(job: EvaluationJob, document: dict, worker: str) -> tuple[Result, str]:
    """The platform failed this attempt: the document is kept (never scored), the job retried, refunded at the end.
    Returns the stored result and the lease's outcome ("requeued" or "failed")."""
    result = _result_append(job, document, worker)
    outcome = LEASE.retry_or_fail(job, document.get("message", ""))
    if outcome == "failed":
        quota_refund(job)
    _after_result(job)
    return result, outcome


def _result_append(job: EvaluationJob, document: dict, worker: str) -> Result | None:
    timing = document.get("timing") or {}
    ci = timing.get("speedup_ci") or [None, None]
    wall = _number(document.get("wall_s"))
    try:
        with transaction.atomic():
            return Result.objects.create(
                job=job,
                run=job.run,
                claim=job.attempts,
                verdict=document.get("verdict") or INFRA_ERROR,
                message=str(document.get("message") or "")[:5000],
                flags=list(document.get("flags") or []),
                speedup=_number(timing.get("speedup")),
                speedup_lo=_number(ci[0]),
                speedup_hi=_number(ci[1]),
                faster=bool(timing.get("faster")),
                reference_ms=_number(timing.get("reference_ms")),
                candidate_ms=_number(timing.get("candidate_ms")),
                # device-seconds (GPUs or CPU ranks); a shared-device profile holds one GPU, whatever its W
                wall_s=wall,
                gpu_seconds=(wall or 0.0) * (1 if job.profile.shared_device else job.profile.world_size),
                document=document,
                worker=worker[:200],
            )
    except IntegrityError:
        return None


def _number(value):
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _after_result(job: EvaluationJob) -> None:
    problem_id = EvaluationJob.objects.filter(pk=job.pk).values_list("candidate__problem_id", flat=True).get()
    # The one receiver: leaderboard/scoring/services.py `on_results_changed` (connected in leaderboard/scoring/apps.py),
    # which refreshes the problem's ProblemScore and the submission's LeaderboardEntry before send returns.
    results_changed.send(EvaluationJob, submission_id=job.submission_id, problem_ids=[problem_id])


# --- the build stage (leaderboard/jobs/build_stage.py): the same lease, before the judged run -----------------------
#
# A build claims the job as a judged run does (compare-and-swap, heartbeats, the reaper for a dead worker), but only
# while the job waits for its build, and the claim it took is given back when the job goes on to its judged run: a
# build is no attempt at judging. Only a compile_error ends the job here; everything else, the stage's own failures
# included, sends it on to its profile's queue, whose job builds whatever the stage did not.


def job_build_claim(job_id: int, worker: str, now=None) -> EvaluationJob | None:
    """Take a job waiting for its build; None if it is not (any more): claimed, judged, or sent on without it."""
    now = now or timezone.now()
    taken = EvaluationJob.objects.filter(
        pk=job_id, status=QUEUED, build_status=EvaluationJob.BUILD_QUEUED, attempts__lt=F("max_attempts")
    ).update(
        status=RUNNING,
        build_status=EvaluationJob.BUILDING,
        lease_owner=worker,
        heartbeat_at=now,
        started_at=now,
        lease_expires_at=now + timedelta(seconds=settings.PKB_LEASE_SECONDS),
        attempts=F("attempts") + 1,
    )
    if taken != 1:
        return None
    return EvaluationJob.objects.select_related(*LEASE.claim_related).get(pk=job_id)


def job_build_passed_on(job_id: int, worker: str, build_status: str, report: dict) -> bool:
    """The stage is done with a job that still needs its judged run (built, nothing_built, unreached, or the stage
    failed: infra_error): back to queued, on its profile's queue. False when the lease is no longer ``worker``'s."""
    with transaction.atomic():
        job = LEASE.held(job_id, worker, related=("profile",))
        if job is None:
            return False
        _pass_on(job, build_status, report)
    return True


def job_build_failed(job_id: int, worker: str, document: dict, report: dict) -> Result | None:
    """The stage found the file's build broken: its compile_error document is the run's result, stored by the same
    path as a judged run's (job_finish), and the job never takes a GPU."""
    with transaction.atomic():
        marked = EvaluationJob.objects.filter(pk=job_id, status=RUNNING, lease_owner=worker).update(
            build_status=EvaluationJob.BUILD_COMPILE_ERROR, build_report=report
        )
        if not marked:
            log.warning("job %s: build result from %s dropped (lease not held)", job_id, worker)
            return None
        return job_finish(job_id, worker, document)


def _pass_on(job: EvaluationJob, build_status: str, report: dict) -> None:
    EvaluationJob.objects.filter(pk=job.pk).update(
        status=QUEUED,
        attempts=F("attempts") - 1,
        lease_owner="",
        lease_expires_at=None,
        started_at=None,
        enqueued_at=timezone.now(),
        build_status=build_status,
        build_report=report,
    )
    LEASE.send_on_commit(job.pk, job.profile.queue_name)


# --- the reaper and re-runs -----------------------------------------------------------------------------------------


def jobs_reap(now=None, broker_depth=None, resend_all: bool = False) -> dict:
    """Re-queue jobs whose lease expired (dead worker) and re-send messages a broker lost. Safe to run anywhere.

    A job whose build worker died goes on to its judged run without the stage (never an attempt lost, nothing
    scored). A job still waiting for its build is also re-sent to its profile's queue once it has waited
    PKB_REQUEUE_QUEUED_AFTER_SECONDS (the profile's queue holds fewer messages than it has queued jobs): whichever
    worker claims it first has it, so no job waits on a build queue that no worker serves."""

    def lost(job: EvaluationJob, message: str) -> str:
        if job.build_status == EvaluationJob.BUILDING:
            _pass_on(
                job,
                EvaluationJob.BUILD_INFRA_ERROR,
                {"status": EvaluationJob.BUILD_INFRA_ERROR, "message": f"the build stage's {message}"},
            )
            return "requeued"
        return _job_infra_failure(job, _infra_document(message), "reaper")[1]

    return LEASE.reap(lost, now, broker_depth, resend_all)


def jobs_rerun(jobs, charge_to: Submitter | None) -> int:
    """Start a new run of each finished job; charged to ``charge_to`` (None: staff, free). Returns jobs queued."""
    with transaction.atomic():
        jobs = list(
            EvaluationJob.objects.select_for_update()
            .select_related("profile", "candidate")
            .filter(pk__in=[j.pk for j in jobs], status__in=(DONE, FAILED))
        )
        if charge_to is not None:
            quota_reserve(charge_to, len(jobs))
        now = timezone.now()
        for job in jobs:
            EvaluationJob.objects.filter(pk=job.pk).update(
                status=QUEUED,
                run=F("run") + 1,
                attempts=0,
                lease_owner="",
                lease_expires_at=None,
                enqueued_at=now,
                started_at=None,
                finished_at=None,
                last_error="",
                build_report={},
                build_status=build_routing.first_build_status(job.profile, job.candidate.code),
            )
            job.refresh_from_db()
            if charge_to is not None:
                QuotaCharge.objects.create(submitter=charge_to, job=job, run=job.run, created_at=now)
            _send_first(job, job.profile, job.profile.queue_name)
        for submission_id in {j.submission_id for j in jobs}:
            problem_ids = list({j.candidate.problem_id for j in jobs if j.submission_id == submission_id})
            # Received by leaderboard/scoring/services.py `on_results_changed`, as in _after_result above.
            results_changed.send(EvaluationJob, submission_id=submission_id, problem_ids=problem_ids)
    return len(jobs)
