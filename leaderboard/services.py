"""Writes across models (HackSoft style): every state change of the site goes through a function here.

Views, the API, the admin, the actors and the management commands stay thin and call these.
"""
from __future__ import annotations

import hashlib
import logging
import math
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from evaluator import schema
from leaderboard import uploads
from leaderboard.broker import send_job
from leaderboard.models import (
    CORRECT,
    INFRA_ERROR,
    ApiToken,
    Candidate,
    EvaluationJob,
    HardwareProfile,
    LeaderboardEntry,
    Problem,
    ProblemScore,
    ProblemStat,
    QuotaCharge,
    Result,
    Submission,
    Submitter,
)
from leaderboard.selectors import quota_usage

log = logging.getLogger("leaderboard.services")
QUEUED, RUNNING, DONE, FAILED = (EvaluationJob.QUEUED, EvaluationJob.RUNNING, EvaluationJob.DONE,
                                 EvaluationJob.FAILED)


class QuotaExceeded(Exception):
    def __init__(self, message: str, next_free_at=None):
        super().__init__(message)
        self.message = message
        self.next_free_at = next_free_at


class NotAllowed(Exception):
    pass


# --- problems and profiles ------------------------------------------------------------------------------------------

DEFAULT_PROFILES = [
    dict(slug="cpu-gloo", name="CPU gloo, W=2 (development)", device="cpu", world_size=2, ranked=False, trials=3,
         gpu_type="", description="Any machine: gloo ranks on CPU. Wall-clock timings, never ranked."),
    dict(slug="gpu-h200x8", name="8x NVIDIA H200 (NVLink)", device="cuda", world_size=8, ranked=True, trials=5,
         gpu_type="NVIDIA H200", multicast_allowed=False, accepting=False,
         description="One host with 8 H200 GPUs; NCCL over NVLink, multicast off. Staff open it for submissions "
                     "(admin: accepting) once a worker consumes the gpu-h200x8 queue."),
]


def profiles_ensure_defaults() -> list[HardwareProfile]:
    """Create the CPU gloo profile and the H200x8 profile if missing; never overwrite staff's edits."""
    out = []
    for spec in DEFAULT_PROFILES:
        profile, _ = HardwareProfile.objects.get_or_create(slug=spec["slug"], defaults=spec)
        out.append(profile)
    return out


def problems_load(catalogue: dict[int, dict], registry: dict, highlight=None) -> dict:
    """Upsert the 87 problems: catalogue facts for all, reference source and docstring for implemented ones."""
    existing = set(Problem.objects.values_list("id", flat=True))
    rows = [Problem(id=pid, **_problem_values(facts, registry.get(pid), highlight))
            for pid, facts in sorted(catalogue.items())]
    with transaction.atomic():
        Problem.objects.bulk_create([p for p in rows if p.id not in existing])
        fields = [f.name for f in Problem._meta.fields if f.name != "id"]
        Problem.objects.bulk_update([p for p in rows if p.id in existing], fields, batch_size=100)
    created = sum(1 for p in rows if p.id not in existing)
    return {"created": created, "updated": len(rows) - created, "implemented": len(registry)}


def _problem_values(facts: dict, problem, highlight) -> dict:
    values = dict(
        stem=facts["stem"], title=facts.get("title", ""), category=facts.get("category", ""),
        parallelism=facts.get("parallelism", ""), origin=facts.get("origin", ""),
        world_size_rule=facts.get("world_size_rule", ""), signature=facts.get("signature", ""),
        timed_arg=facts.get("timed_arg", ""), output=facts.get("output", ""),
        collectives=facts.get("collectives", []),
        bytes_per_rank=facts.get("default_bytes_per_rank_moved", 0) or 0,
        flops_per_rank=facts.get("default_flops_per_rank", 0) or 0,
        implemented=problem is not None, atol=None, rtol=None, docstring="", reference_source="",
        reference_html="", light={},
    )
    if problem is not None:
        source = problem.source()
        values.update(atol=problem.atol, rtol=problem.rtol, docstring=problem.docstring,
                      reference_source=source, reference_html=highlight(source) if highlight else "",
                      light=_light(problem), timed_arg=problem.timed_arg_name())
    return values


def _light(problem) -> dict:
    try:
        return {str(w): problem.light(W=w) for w in (2, 8) if problem.allows_world_size(w)}
    except Exception as exc:  # a formula that fails must not stop the catalogue from loading
        return {"error": str(exc)}


def jobs_create_missing() -> int:
    """Jobs for candidates whose problem was not implemented when they were uploaded (free: never charged)."""
    created = 0
    waiting = Candidate.objects.filter(problem__implemented=True, jobs__isnull=True).select_related("submission")
    for candidate in waiting:
        submission = candidate.submission
        with transaction.atomic():
            job = EvaluationJob.objects.create(
                candidate=candidate, profile_id=submission.profile_id, submission=submission,
                submitter_id=submission.submitter_id, max_attempts=settings.PKB_JOB_MAX_ATTEMPTS,
                enqueued_at=timezone.now())
            _send_on_commit(job)
            scores_refresh(submission, [candidate.problem_id])
            entry_refresh(submission)
        created += 1
    return created


# --- submitters and tokens ------------------------------------------------------------------------------------------

def submitter_for(user) -> Submitter:
    submitter, _ = Submitter.objects.get_or_create(user=user)
    return submitter


def token_create(submitter: Submitter, name: str, scopes: list[str], days: int = 90) -> tuple[ApiToken, str]:
    """A new token; the raw value is returned once and never stored."""
    bad = [s for s in scopes if s not in ApiToken.SCOPES]
    if bad or not scopes:
        raise ValueError(f"scopes must be a non-empty subset of {ApiToken.SCOPES}")
    if not 1 <= days <= 366:
        raise ValueError("a token lives 1 to 366 days")
    prefix = secrets.token_hex(4)
    raw = f"pkb_{prefix}_{secrets.token_urlsafe(32)}"
    token = ApiToken.objects.create(submitter=submitter, name=name[:100] or "token", prefix=prefix,
                                    digest=ApiToken.hash(raw), scopes=sorted(set(scopes)),
                                    expires_at=timezone.now() + timedelta(days=days))
    return token, raw


def token_authenticate(raw: str) -> ApiToken | None:
    """The active token for a raw ``pkb_<prefix>_<secret>`` value, or None; records its last use."""
    parts = raw.split("_", 2)
    if len(parts) != 3 or parts[0] != "pkb":
        return None
    token = ApiToken.objects.select_related("submitter__user").filter(prefix=parts[1]).first()
    if token is None or not secrets.compare_digest(token.digest, ApiToken.hash(raw)) or not token.is_active():
        return None
    if not token.submitter.user.is_active:
        return None
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token


def token_revoke(token: ApiToken) -> None:
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())


# --- quotas ------------------------------------------------------------------------------------------------------------

def quota_reserve(submitter: Submitter, units: int, now=None) -> None:
    """Charge ``units`` evaluations, or raise QuotaExceeded. Call inside transaction.atomic().

    The submitter row is locked (SELECT ... FOR UPDATE) before counting, so two uploads of one user serialise here and
    cannot both pass a check that only one of them fits (no count-then-insert race). The caller inserts the charges
    in the same transaction.
    """
    if units <= 0:
        return
    now = now or timezone.now()
    Submitter.objects.select_for_update().filter(pk=submitter.pk).first()
    limits = submitter.limits()
    usage = quota_usage(submitter, now)
    if usage["concurrent"] + units > limits["concurrent"]:
        raise QuotaExceeded(
            f"this upload needs {units} evaluations and {usage['concurrent']} of yours are queued or running; "
            f"at most {limits['concurrent']} may wait at once. Next free slot: when "
            f"{usage['concurrent'] + units - limits['concurrent']} of them finish.")
    if usage["daily"] + units > limits["daily"]:
        free_at = _daily_free_at(submitter, usage["daily"] + units - limits["daily"], now) \
            if units <= limits["daily"] else None
        when = f"next free slot at {free_at:%Y-%m-%d %H:%M} UTC" if free_at else "it exceeds your daily limit"
        raise QuotaExceeded(f"this upload needs {units} evaluations; {usage['daily']} of your {limits['daily']} "
                            f"per 24 hours are used ({when}).", free_at)
    if usage["total"] + units > limits["total"]:
        raise QuotaExceeded(f"this upload needs {units} evaluations; {usage['total']} of your {limits['total']} in "
                            f"total are used. Ask the staff for more.")


def _daily_free_at(submitter: Submitter, excess: int, now):
    """When ``excess`` charges of the rolling 24-hour window will have left it."""
    times = list(QuotaCharge.objects.filter(submitter=submitter, refunded_at__isnull=True,
                                            created_at__gt=now - timedelta(days=1))
                 .order_by("created_at").values_list("created_at", flat=True)[:excess])
    return times[-1] + timedelta(days=1) if len(times) == excess else None


def quota_refund(job: EvaluationJob) -> None:
    """The platform failed this run: its charge no longer counts."""
    QuotaCharge.objects.filter(job=job, run=job.run, refunded_at__isnull=True).update(refunded_at=timezone.now())


# --- uploads -----------------------------------------------------------------------------------------------------------

def upload_limits() -> uploads.Limits:
    return uploads.Limits(max_total_bytes=settings.PKB_MAX_UPLOAD_BYTES, max_file_bytes=settings.PKB_MAX_FILE_BYTES,
                          max_files=87 * settings.PKB_MAX_ATTEMPTS)


def upload_members(files: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """(path, bytes) of an upload: one archive is unpacked, otherwise the files are the directory."""
    limits = upload_limits()
    total = sum(len(data) for _, data in files)
    if total > limits.max_total_bytes:
        raise uploads.UploadRejected([uploads.UploadError("(upload)", "over_size",
                                                          f"upload is {total:,} bytes; the limit is "
                                                          f"{limits.max_total_bytes:,} bytes")])
    archives = [(name, data) for name, data in files if uploads.is_archive(name)]
    if archives and len(files) > 1:
        raise uploads.UploadRejected([uploads.UploadError(archives[0][0], "bad_layout",
                                                          "send one archive, or the files of a directory, not both")])
    if archives:
        return uploads.members_from_archive(archives[0][0], archives[0][1], limits)
    return files


def submission_create(submitter: Submitter, fields: dict, files: list[tuple[str, bytes]],
                      allow_duplicate: bool = False) -> Submission:
    """Validate an upload completely, then store it, charge the quota and queue its jobs in one transaction.

    Raises uploads.UploadRejected (nothing stored) or QuotaExceeded (nothing stored). Files identical to an earlier
    submission of the same submitter on the same profile are refused (rule "duplicate", naming it): re-run that one.
    allow_duplicate: the demo's --force and test set-ups that need several copies.
    """
    members = upload_members(files)
    stems = dict(Problem.objects.values_list("stem", "id"))
    parsed = uploads.parse(members, stems, upload_limits())
    open_profiles = {p.slug: p for p in HardwareProfile.objects.filter(accepting=True)}
    clean = uploads.clean_metadata(fields, parsed, settings.PKB_MAX_ATTEMPTS, set(open_profiles))
    profile = open_profiles[clean.pop("profile")]
    implemented = set(Problem.objects.filter(implemented=True).values_list("id", flat=True))
    judged = [f for f in parsed.files if f.problem_id in implemented]
    feedback_for = _feedback_target(submitter, fields.get("feedback_for"))
    digest = files_digest(parsed.files)
    with transaction.atomic():
        quota_reserve(submitter, len(judged))  # locks the submitter's row: two identical uploads serialise here
        if not allow_duplicate:
            _duplicate_check(submitter, profile, digest)
        submission = Submission.objects.create(submitter=submitter, profile=profile, archive_sha256=parsed.sha256,
                                               files_sha256=digest, feedback_for=feedback_for, **clean)
        _candidates_and_jobs(submission, parsed.files, implemented)
        scores_refresh(submission)
        entry_refresh(submission)
    log.info("submission %s by %s: %d files, %d jobs on %s", submission.pk, submitter, len(parsed.files),
             len(judged), profile.slug)
    return submission


def files_digest(files) -> str:
    """One hash of an upload's candidates, whatever their order or the archive around them: sha256 over the sorted
    (problem, attempt, file sha256) lines."""
    lines = sorted(f"{f.problem_id}:{f.attempt}:{f.sha256}" for f in files)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _duplicate_check(submitter: Submitter, profile: HardwareProfile, digest: str) -> None:
    earlier = (Submission.objects.filter(submitter=submitter, profile=profile, files_sha256=digest)
               .order_by("pk").values_list("pk", flat=True).first())
    if earlier is not None:
        raise uploads.UploadRejected([uploads.UploadError(
            "(upload)", "duplicate",
            f"these files are identical to your submission #{earlier} on {profile.slug} "
            f"(/submissions/{earlier}/): re-run that one instead of uploading them again",
            url=f"/submissions/{earlier}/")])


def _feedback_target(submitter: Submitter, value) -> Submission | None:
    if value in (None, ""):
        return None
    target = Submission.objects.filter(pk=str(value).strip() if str(value).strip().isdigit() else -1,
                                       submitter=submitter).first()
    if target is None:
        raise uploads.UploadRejected([uploads.UploadError(uploads.METADATA_FILE, "bad_metadata",
                                                          f"feedback_for={value!r} is not one of your submissions")])
    return target


def _candidates_and_jobs(submission: Submission, files: list[uploads.CandidateFile], implemented: set[int]) -> None:
    candidates = Candidate.objects.bulk_create([
        Candidate(submission=submission, problem_id=f.problem_id, attempt=f.attempt, filename=f.path,
                  backend=f.backend, code=f.code, sha256=f.sha256, size=f.size)
        for f in files
    ])
    now = timezone.now()
    jobs = EvaluationJob.objects.bulk_create([
        EvaluationJob(candidate=c, profile_id=submission.profile_id, submission=submission,
                      submitter_id=submission.submitter_id, max_attempts=settings.PKB_JOB_MAX_ATTEMPTS,
                      enqueued_at=now)
        for c in candidates if c.problem_id in implemented
    ])
    if jobs and jobs[0].pk is None:  # backends that cannot return ids from bulk inserts
        jobs = list(EvaluationJob.objects.filter(submission=submission))
    QuotaCharge.objects.bulk_create([QuotaCharge(submitter_id=submission.submitter_id, job=j, run=1, created_at=now)
                                     for j in jobs])
    queue = HardwareProfile.objects.values_list("slug", flat=True).get(pk=submission.profile_id)
    for job in jobs:
        _send_on_commit(job, queue)


def _send_on_commit(job: EvaluationJob, queue: str | None = None) -> None:
    """The broker message (the job id only) leaves when the transaction that queued the job commits."""
    job_id = job.pk
    queue = queue or HardwareProfile.objects.values_list("slug", flat=True).get(pk=job.profile_id)
    transaction.on_commit(lambda: _send_quietly(job_id, queue))


def _send_quietly(job_id: int, queue: str) -> None:
    send_quietly(send_job, job_id, queue, "job")


def send_quietly(send, message_id: int, queue: str, what: str, logger: logging.Logger = log) -> None:
    """``send(message_id, queue)``, logging a failure instead of raising it: a lost message is repaired by the reaper,
    so a broker outage must not fail the request that queued the job (or the feedback run)."""
    try:
        send(message_id, queue)
    except Exception:
        logger.exception("could not send %s %s to queue %s; the reaper will re-send it", what, message_id, queue)


# --- visibility and staff actions -----------------------------------------------------------------------------------

def submission_publish(submission: Submission, user) -> None:
    if not (submission.is_owner(user) or user.is_staff):
        raise NotAllowed("only the owner publishes a submission")
    if submission.visibility == "hidden":
        raise NotAllowed("hidden by staff")
    with transaction.atomic():
        Submission.objects.filter(pk=submission.pk).update(visibility="public", published_at=timezone.now(),
                                                           withdrawn_at=None)
        submission.refresh_from_db()
        _listing_refresh(submission)


def submission_withdraw(submission: Submission, user) -> None:
    """The owner takes a published submission off every leaderboard and export; its page, results, code and logs
    stay visible to the owner (and staff). Publishing it again lists it again."""
    if not (submission.is_owner(user) or user.is_staff):
        raise NotAllowed("only the owner withdraws a submission")
    if submission.visibility != "public":
        raise NotAllowed("only a published submission can be withdrawn"
                         + ("; an unpublished one can be deleted" if submission.visibility == "private" else ""))
    with transaction.atomic():
        Submission.objects.filter(pk=submission.pk).update(visibility="withdrawn", withdrawn_at=timezone.now())
        submission.refresh_from_db()
        _listing_refresh(submission)


def submission_delete(submission: Submission, user) -> int:
    """The owner deletes a submission that was never published, once none of its evaluations is queued or running
    (a worker may hold one). Its evaluations stay charged to the quota. Returns the deleted submission's id."""
    if not (submission.is_owner(user) or user.is_staff):
        raise NotAllowed("only the owner deletes a submission")
    if submission.visibility != "private" or submission.published_at is not None:
        raise NotAllowed("a submission that was published cannot be deleted: withdraw it instead")
    pk = submission.pk
    with transaction.atomic():
        Submitter.objects.select_for_update().filter(pk=submission.submitter_id).first()
        if EvaluationJob.objects.filter(submission_id=pk, status__in=(QUEUED, RUNNING)).exists():
            raise NotAllowed("some of its evaluations are queued or running: delete it once they finish")
        Submission.objects.filter(pk=pk).delete()
    log.info("submission %s deleted by %s", pk, user)
    return pk


def submission_set_visibility(submission: Submission, visibility: str) -> None:
    """Staff: hide or restore (to private) a submission."""
    with transaction.atomic():
        Submission.objects.filter(pk=submission.pk).update(visibility=visibility)
        submission.refresh_from_db()
        _listing_refresh(submission)


def submission_flag(submission: Submission, reason: str, flagged: bool = True) -> None:
    with transaction.atomic():
        Submission.objects.filter(pk=submission.pk).update(flagged=flagged, flag_reason=reason[:300] if flagged else "")
        submission.refresh_from_db()
        entry_refresh(submission)


def submission_verify(submission: Submission, verified: bool = True) -> None:
    Submission.objects.filter(pk=submission.pk).update(verified=verified)


def _listing_refresh(submission: Submission) -> None:
    ProblemScore.objects.filter(submission=submission).update(listed=submission.visibility == "public")
    problem_stats_refresh(Problem.objects.values_list("id", flat=True), submission.profile_id, submission.protocol)
    entry_refresh(submission)


# --- jobs: claim, heartbeat, finish, reap, re-run -------------------------------------------------------------------

def job_claim(job_id: int, worker: str, now=None) -> EvaluationJob | None:
    """Take a queued job by compare-and-swap (UPDATE ... WHERE status = 'queued'); None if another worker has it, it
    is finished, or its retries are spent. A running job whose lease expired is first re-queued by the reaper,
    which records the lost attempt."""
    now = now or timezone.now()
    taken = EvaluationJob.objects.filter(pk=job_id, status=QUEUED, attempts__lt=F("max_attempts")).update(
        status=RUNNING, lease_owner=worker, lease_expires_at=now + timedelta(seconds=settings.PKB_LEASE_SECONDS),
        heartbeat_at=now, started_at=now, attempts=F("attempts") + 1)
    if taken != 1:
        return None
    return EvaluationJob.objects.select_related("candidate__problem", "profile", "submission").get(pk=job_id)


def job_heartbeat(job_id: int, worker: str) -> bool:
    """Extend the lease; False when the lease is no longer ours (the worker must stop and write nothing)."""
    now = timezone.now()
    return EvaluationJob.objects.filter(pk=job_id, status=RUNNING, lease_owner=worker).update(
        heartbeat_at=now, lease_expires_at=now + timedelta(seconds=settings.PKB_LEASE_SECONDS)) == 1


def job_finish(job_id: int, worker: str, document: dict) -> Result | None:
    """Store the judge's document for the worker that holds the lease; idempotent, exactly one final result a run."""
    with transaction.atomic():
        job = EvaluationJob.objects.select_for_update().select_related("profile").filter(pk=job_id).first()
        if job is None or job.status != RUNNING or job.lease_owner != worker:
            log.warning("job %s: result from %s dropped (lease not held)", job_id, worker)
            return None
        if document.get("verdict") == INFRA_ERROR:
            return _job_infra_failure(job, document, worker)
        result = _result_append(job, document, worker)
        if result is None:  # a final result for this run exists already: the job is done
            log.warning("job %s run %s: duplicate final result from %s ignored", job.pk, job.run, worker)
        EvaluationJob.objects.filter(pk=job.pk).update(status=DONE, finished_at=timezone.now(), lease_owner="",
                                                       lease_expires_at=None, last_error="")
        _after_result(job)
        return result


def job_infra_error(job_id: int, worker: str, message: str, logs: list | None = None) -> Result | None:
    """The judge did not produce a document (crash, bad exit status, unreadable JSON): never scored."""
    document = {"verdict": INFRA_ERROR, "message": message, "flags": [], "logs": logs or [], "environment": {}}
    return job_finish(job_id, worker, document)


def _job_infra_failure(job: EvaluationJob, document: dict, worker: str) -> Result:
    result = _result_append(job, document, worker)
    if job.attempts < job.max_attempts:
        EvaluationJob.objects.filter(pk=job.pk).update(status=QUEUED, lease_owner="", lease_expires_at=None,
                                                       enqueued_at=timezone.now(),
                                                       last_error=document.get("message", "")[:2000])
        _send_on_commit(job, job.profile.queue_name)
    else:
        EvaluationJob.objects.filter(pk=job.pk).update(status=FAILED, lease_owner="", lease_expires_at=None,
                                                       finished_at=timezone.now(),
                                                       last_error=document.get("message", "")[:2000])
        quota_refund(job)
    _after_result(job)
    return result


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
    submission = Submission.objects.get(pk=job.submission_id)
    problem_id = Candidate.objects.filter(pk=job.candidate_id).values_list("problem_id", flat=True).get()
    scores_refresh(submission, [problem_id])
    entry_refresh(submission)


def jobs_reap(now=None, broker_depth=None, resend_all: bool = False) -> dict:
    """Re-queue jobs whose lease expired (dead worker) and re-send messages a broker lost. Safe to run anywhere."""
    now = now or timezone.now()
    counts = {"requeued": 0, "failed": 0, "resent": 0}
    expired = EvaluationJob.objects.filter(status=RUNNING, lease_expires_at__lt=now).values_list("pk", flat=True)
    for job_id in list(expired[:1000]):
        outcome = _reap_one(job_id, now)
        if outcome:
            counts[outcome] += 1
    counts["resent"] = _resend_lost(now, broker_depth, resend_all)
    if any(counts.values()):
        log.info("reaper: %s", counts)
    return counts


def _reap_one(job_id: int, now) -> str | None:
    with transaction.atomic():
        job = (EvaluationJob.objects.select_for_update(skip_locked=True).select_related("profile")
               .filter(pk=job_id, status=RUNNING, lease_expires_at__lt=now).first())
        if job is None:
            return None
        message = f"worker {job.lease_owner or '?'} lost: its lease expired at {job.lease_expires_at:%H:%M:%S} UTC"
        _job_infra_failure(job, {"verdict": INFRA_ERROR, "message": message, "flags": [], "logs": [],
                                 "environment": {}}, "reaper")
        return "requeued" if job.attempts < job.max_attempts else "failed"


def _resend_lost(now, broker_depth, resend_all: bool = False) -> int:
    return resend_lost(EvaluationJob, lambda profile: profile.queue_name, lambda pk, queue: _send_quietly(pk, queue),
                       now, broker_depth, resend_all)


def resend_lost(model, queue_of, send, now, broker_depth, resend_all: bool = False) -> int:
    """Re-send the oldest stale queued rows of ``model`` (jobs, feedback runs) of each profile's queue
    (``queue_of(profile)``), as many as the broker holds fewer messages than rows; ``send(pk, queue)`` re-sends one.
    A row is claimed for re-sending by moving its ``enqueued_at``, so two reapers never send it twice."""
    from leaderboard.broker import queue_depth

    depth_of = broker_depth or queue_depth
    stale_before = now if resend_all else now - timedelta(seconds=settings.PKB_REQUEUE_QUEUED_AFTER_SECONDS)
    resent = 0
    for profile in HardwareProfile.objects.all():
        queued = model.objects.filter(profile=profile, status=model.QUEUED)
        waiting = queued.count()
        if not waiting:
            continue
        queue = queue_of(profile)
        depth = depth_of(queue)
        missing = waiting - depth if depth is not None else waiting
        if missing <= 0:
            continue
        stale = list(queued.filter(enqueued_at__lte=stale_before).order_by("enqueued_at")
                     .values_list("pk", flat=True)[:missing])
        for pk in stale:
            if model.objects.filter(pk=pk, status=model.QUEUED).update(enqueued_at=now) == 1:
                send(pk, queue)
                resent += 1
    return resent


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
            _send_on_commit(job, job.profile.queue_name)
        for submission_id in {j.submission_id for j in jobs}:
            submission = Submission.objects.get(pk=submission_id)
            scores_refresh(submission, list({j.candidate.problem_id for j in jobs if j.submission_id == submission_id}))
            entry_refresh(submission)
    return len(jobs)


def submission_rerun(submission: Submission, user, only_failed: bool = False) -> int:
    if not (submission.is_owner(user) or user.is_staff):
        raise NotAllowed("only the owner or staff re-run a submission")
    jobs = submission.jobs.filter(status=FAILED) if only_failed else submission.jobs.filter(status__in=(DONE, FAILED))
    charge = None if user.is_staff else submission.submitter
    return jobs_rerun(list(jobs.select_related("candidate")), charge)


# --- materialised scores -------------------------------------------------------------------------------------------

def scores_refresh(submission: Submission, problem_ids: list[int] | None = None) -> None:
    """Recompute the submission's ProblemScore rows (all 87, or the given problems) from its jobs' current results."""
    ids = list(problem_ids) if problem_ids is not None else list(Problem.objects.values_list("id", flat=True))
    attempts: dict[int, list[dict]] = {pid: [] for pid in ids}
    jobs = {j.candidate_id: j for j in EvaluationJob.objects.filter(submission=submission,
                                                                    candidate__problem_id__in=ids)}
    results = {}
    if jobs:
        for r in Result.objects.filter(job__in=list(jobs.values())).exclude(verdict=INFRA_ERROR).order_by("id"):
            results[(r.job_id, r.run)] = r
    for c in Candidate.objects.filter(submission=submission, problem_id__in=ids).only("id", "problem_id", "attempt"):
        job = jobs.get(c.id)
        attempts[c.problem_id].append({"attempt": c.attempt, "job": job,
                                       "result": results.get((job.pk, job.run)) if job else None})
    existing = {s.problem_id: s for s in ProblemScore.objects.filter(submission=submission, problem_id__in=ids)}
    ranked = HardwareProfile.objects.filter(pk=submission.profile_id).values_list("ranked", flat=True).get()
    to_create, to_update = [], []
    for pid in ids:
        score = existing.get(pid) or ProblemScore(submission=submission, problem_id=pid)
        _score_fill(score, submission, attempts[pid], ranked)
        (to_update if score.pk else to_create).append(score)
    ProblemScore.objects.bulk_create(to_create)
    ProblemScore.objects.bulk_update(to_update, SCORE_FIELDS)
    if submission.visibility == "public":
        problem_stats_refresh(ids, submission.profile_id, submission.protocol)


def problem_stats_refresh(problem_ids, profile_id: int, protocol: str) -> None:
    """Recompute the solve-rate rows of some problems for one profile and protocol, from the listed scores.

    Each row is locked (in problem order) before its aggregate is read, so two writers refreshing the same problem
    serialise and the second one sees the first one's committed score: no lost update.
    """
    from django.db.models import Count, Max, Q

    ids = sorted(set(problem_ids))
    ProblemStat.objects.bulk_create([ProblemStat(problem_id=pid, profile_id=profile_id, protocol=protocol)
                                     for pid in ids], ignore_conflicts=True)
    with transaction.atomic():
        stats = list(ProblemStat.objects.select_for_update().filter(
            problem_id__in=ids, profile_id=profile_id, protocol=protocol).order_by("problem_id"))
        rows = {row["problem_id"]: row for row in ProblemScore.objects.filter(
            problem_id__in=ids, profile_id=profile_id, protocol=protocol, listed=True).exclude(
            status=ProblemScore.NO_CANDIDATE).values("problem_id").annotate(
            tried=Count("id"), solved=Count("id", filter=Q(correct=True)), fast=Count("id", filter=Q(faster=True)),
            best=Max("speedup", filter=Q(correct=True)))}
        now = timezone.now()
        for stat in stats:
            row = rows.get(stat.problem_id, {})
            stat.tried, stat.solved = row.get("tried", 0), row.get("solved", 0)
            stat.faster, stat.best_speedup, stat.updated_at = row.get("fast", 0), row.get("best"), now
        ProblemStat.objects.bulk_update(stats, ["tried", "solved", "faster", "best_speedup", "updated_at"])


SCORE_FIELDS = ["profile", "protocol", "listed", "status", "attempt", "result", "correct", "faster", "flagged",
                "speedup", "speedup_lo", "speedup_hi", "attempts_correct", "attempts_total"]


def _score_fill(score: ProblemScore, submission: Submission, attempts: list[dict], ranked: bool) -> None:
    score.profile_id, score.protocol = submission.profile_id, submission.protocol
    score.listed = submission.visibility == "public"
    score.attempts_total = len(attempts)
    score.attempts_correct = sum(1 for a in attempts if a["result"] and _counts_correct(a["result"], ranked))
    chosen = _select(submission.selection_rule, attempts, ranked)
    score.attempt = chosen["attempt"] if chosen else None
    result = chosen["result"] if chosen else None
    score.result = result
    score.status = _status(chosen)
    score.flagged = bool(result and result.flags)
    score.correct = bool(result and _counts_correct(result, ranked))
    score.faster = bool(score.correct and result.faster and not result.flags)
    score.speedup = result.speedup if result else None
    score.speedup_lo = result.speedup_lo if result else None
    score.speedup_hi = result.speedup_hi if result else None


TIMING_FLAGS = set(schema.TIMING_FLAGS)


def _counts_correct(result: Result, ranked: bool) -> bool:
    """Correct and unflagged. On an unranked profile (CPU), where timings never rank, a flag that only questions the
    timing leaves the correctness verdict standing (the result still never counts as faster); so does "unsandboxed"
    (a development host without the whole sandbox: shown on every page, and ranked profiles never run that way)."""
    if result.verdict != CORRECT:
        return False
    return not result.flags or (not ranked and set(result.flags) <= TIMING_FLAGS | {schema.FLAG_UNSANDBOXED})


def _status(chosen: dict | None) -> str:
    if chosen is None:
        return ProblemScore.NO_CANDIDATE
    job, result = chosen["job"], chosen["result"]
    if job is None:
        return ProblemScore.NOT_JUDGED
    if job.status in (QUEUED, RUNNING):
        return ProblemScore.PENDING
    if result is None:
        return INFRA_ERROR  # failed after retries: the platform's fault, not the candidate's
    return result.verdict


def _select(rule: str, attempts: list[dict], ranked: bool = True) -> dict | None:
    """The attempt that stands for the problem under the submission's selection rule."""
    if not attempts:
        return None
    ordered = sorted(attempts, key=lambda a: a["attempt"])
    if rule == "first":
        return ordered[0]
    if rule in ("last", "self_selected"):
        return ordered[-1]
    # best_measured: wait for every attempt, then the correct one with the highest speedup.
    pending = [a for a in ordered if a["job"] is not None and a["job"].status in (QUEUED, RUNNING)]
    if pending:
        return pending[0]
    good = [a for a in ordered if a["result"] and _counts_correct(a["result"], ranked)]
    if good:
        return max(good, key=lambda a: (a["result"].faster, a["result"].speedup or 0.0, -a["attempt"]))
    judged = [a for a in ordered if a["result"]]
    return judged[0] if judged else ordered[0]


def entry_refresh(submission: Submission) -> LeaderboardEntry:
    """Recompute the submission's leaderboard row from its 87 ProblemScore rows."""
    scores = list(ProblemScore.objects.filter(submission=submission).only(
        "status", "correct", "faster", "flagged", "speedup", "speedup_lo"))
    correct = [s for s in scores if s.correct]
    timed = [s for s in correct if not s.flagged]  # a flagged timing never counts, even where correctness stands
    speedups = [s.speedup for s in timed if s.speedup and s.speedup > 0]
    total = Problem.objects.count() or 87
    profile = HardwareProfile.objects.get(pk=submission.profile_id)
    values = dict(
        profile_id=submission.profile_id, protocol=submission.protocol, backend=submission.backend,
        attempts_k=submission.attempts_k, listed=submission.visibility == "public",
        ranked=submission.visibility == "public" and profile.ranked and not submission.flagged,
        correct=len(correct), faster=sum(1 for s in correct if s.faster),
        fast_1_0=sum(1 for s in correct if s.faster) / total,
        fast_1_5=sum(1 for s in timed if (s.speedup_lo or 0) > 1.5) / total,
        fast_2_0=sum(1 for s in timed if (s.speedup_lo or 0) > 2.0) / total,
        geomean_speedup=math.exp(sum(math.log(x) for x in speedups) / len(speedups)) if speedups else None,
        judged=sum(1 for s in scores if s.status not in (ProblemScore.PENDING, ProblemScore.NOT_JUDGED,
                                                         ProblemScore.NO_CANDIDATE, INFRA_ERROR)),
        pending=sum(1 for s in scores if s.status == ProblemScore.PENDING),
        flagged_results=sum(1 for s in scores if s.flagged), updated_at=timezone.now(),
    )
    entry, _ = LeaderboardEntry.objects.update_or_create(submission=submission, defaults=values)
    _costs_refresh(submission)
    return entry


def _costs_refresh(submission: Submission) -> None:
    """Platform-measured cost, as leaderboard/costs.py defines it (rank-seconds, feedback runs)."""
    from leaderboard import costs

    costs.refresh(submission.pk)
