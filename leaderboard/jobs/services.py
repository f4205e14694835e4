"""Writes of evaluation jobs: creation, their lease lifecycle on workers (the engine: leaderboard/jobs/lease.py),
the judge's documents stored as results, and re-runs."""
from __future__ import annotations

import logging
import math

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from evaluator.schema import INFRA_ERROR
from leaderboard.accounts.models import QuotaCharge, Submitter
from leaderboard.accounts.services import quota_refund, quota_reserve
from leaderboard.jobs.broker import ACTOR_NAME
from leaderboard.jobs.lease import Lease
from leaderboard.jobs.models import EvaluationJob, Result
from leaderboard.jobs.signals import results_changed

log = logging.getLogger("leaderboard.jobs.services")
QUEUED, RUNNING, DONE, FAILED = (EvaluationJob.QUEUED, EvaluationJob.RUNNING, EvaluationJob.DONE,
                                 EvaluationJob.FAILED)
LEASE = Lease(EvaluationJob, ACTOR_NAME, lambda profile: profile.queue_name, "job",
              claim_related=("candidate__problem", "profile", "submission"), logger=log)


def jobs_create(submission, candidates: list, queue: str) -> list[EvaluationJob]:
    """One job per candidate (of ``submission``), in the caller's transaction; each message leaves when it commits."""
    now = timezone.now()
    jobs = EvaluationJob.objects.bulk_create([
        EvaluationJob(candidate=c, profile_id=submission.profile_id, submission=submission,
                      submitter_id=submission.submitter_id, max_attempts=settings.PKB_JOB_MAX_ATTEMPTS,
                      enqueued_at=now)
        for c in candidates
    ])
    if jobs and jobs[0].pk is None:  # backends that cannot return ids from bulk inserts
        jobs = list(EvaluationJob.objects.filter(submission=submission, candidate__in=candidates))
    for job in jobs:
        LEASE.send_on_commit(job.pk, queue)
    return jobs


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
                job=job, run=job.run, claim=job.attempts, verdict=document.get("verdict") or INFRA_ERROR,
                message=str(document.get("message") or "")[:5000], flags=list(document.get("flags") or []),
                speedup=_number(timing.get("speedup")), speedup_lo=_number(ci[0]), speedup_hi=_number(ci[1]),
                faster=bool(timing.get("faster")), timing_ranked=bool(timing.get("ranked")),
                reference_ms=_number(timing.get("reference_ms")), candidate_ms=_number(timing.get("candidate_ms")),
                wall_s=wall, gpu_seconds=(wall or 0.0) * job.profile.world_size,  # device-seconds (GPUs or CPU ranks)
                document=document, worker=worker[:200])
    except IntegrityError:
        return None


def _number(value):
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _after_result(job: EvaluationJob) -> None:
    problem_id = EvaluationJob.objects.filter(pk=job.pk).values_list("candidate__problem_id", flat=True).get()
    results_changed.send(EvaluationJob, submission_id=job.submission_id, problem_ids=[problem_id])


# --- the reaper and re-runs -----------------------------------------------------------------------------------------

def jobs_reap(now=None, broker_depth=None, resend_all: bool = False) -> dict:
    """Re-queue jobs whose lease expired (dead worker) and re-send messages a broker lost. Safe to run anywhere."""
    def lost(job: EvaluationJob, message: str) -> str:
        return _job_infra_failure(job, _infra_document(message), "reaper")[1]

    return LEASE.reap(lost, now, broker_depth, resend_all)


def jobs_rerun(jobs, charge_to: Submitter | None) -> int:
    """Start a new run of each finished job; charged to ``charge_to`` (None: staff, free). Returns jobs queued."""
    with transaction.atomic():
        jobs = list(EvaluationJob.objects.select_for_update().select_related("profile", "candidate")
                    .filter(pk__in=[j.pk for j in jobs], status__in=(DONE, FAILED)))
        if charge_to is not None:
            quota_reserve(charge_to, len(jobs))
        now = timezone.now()
        for job in jobs:
            EvaluationJob.objects.filter(pk=job.pk).update(status=QUEUED, run=F("run") + 1, attempts=0,
                                                           lease_owner="", lease_expires_at=None, enqueued_at=now,
                                                           started_at=None, finished_at=None, last_error="")
            job.refresh_from_db()
            if charge_to is not None:
                QuotaCharge.objects.create(submitter=charge_to, job=job, run=job.run, created_at=now)
            LEASE.send_on_commit(job.pk, job.profile.queue_name)
        for submission_id in {j.submission_id for j in jobs}:
            problem_ids = list({j.candidate.problem_id for j in jobs if j.submission_id == submission_id})
            results_changed.send(EvaluationJob, submission_id=submission_id, problem_ids=problem_ids)
    return len(jobs)
