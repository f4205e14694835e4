"""Writes of the feedback app: sessions, runs (feedback and profile), their quota, their lifecycle on workers.

The rules are the leaderboard's (docs/site.md), applied to a separate table and queue: the FeedbackRun row is the
truth, a broker message (the run id only, on ``feedback-<profile>``) only wakes a worker, a worker claims the row by
compare-and-swap and renews a lease, a run the platform failed is retried and finally refunded. The feedback quota
is reserved under the submitter's row lock, in the transaction that inserts the run.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from evaluator.contract import schema
from leaderboard.accounts.models import Submitter
from leaderboard.accounts.services import NotAllowed, QuotaExceeded
from leaderboard.catalogue.models import HardwareProfile, Problem
from leaderboard.feedback import conf, report, seeds
from leaderboard.feedback.models import FeedbackQuota, FeedbackRun, FeedbackSession, queue_for
from leaderboard.feedback.selectors import measured_cost, session_totals  # noqa: F401 (reads live in selectors)
from leaderboard.feedback.signals import feedback_changed
from leaderboard.jobs.broker import FEEDBACK_ACTOR_NAME
from leaderboard.jobs.lease import Lease
from leaderboard.submissions.models import Candidate, Submission
from leaderboard.submissions.uploads import AGENTIC

log = logging.getLogger("leaderboard.feedback")
QUEUED, RUNNING, DONE, FAILED = FeedbackRun.QUEUED, FeedbackRun.RUNNING, FeedbackRun.DONE, FeedbackRun.FAILED
LEASE = Lease(
    FeedbackRun,
    FEEDBACK_ACTOR_NAME,
    lambda profile: queue_for(profile.slug),
    "feedback run",
    claim_related=("problem", "profile"),
    logger=log,
)
MAX_SIDE = 65536


class Refused(Exception):
    """The request cannot become a run (bad problem, closed session, ...); nothing was stored or charged."""

    def __init__(self, message: str, field: str = ""):
        super().__init__(message)
        self.message = message
        self.field = field


class FeedbackQuotaExceeded(QuotaExceeded):
    pass


# --- sessions --------------------------------------------------------------------------------------------------------


def session_open(submitter: Submitter, profile_slug: str | None, label: str = "") -> FeedbackSession:
    profile = HardwareProfile.objects.filter(slug=profile_slug or settings.PKB_DEFAULT_PROFILE).first()
    if profile is None:
        raise Refused(f"no hardware profile {profile_slug!r}", "profile")
    if not profile.accepting:
        raise Refused(f"profile {profile.slug} is not open for feedback runs", "profile")
    return FeedbackSession.objects.create(submitter=submitter, profile=profile, label=(label or "")[:200])


def session_close(session: FeedbackSession, user) -> None:
    _owner_only(session.submitter, user)
    FeedbackSession.objects.filter(pk=session.pk, closed_at__isnull=True).update(closed_at=timezone.now())
    session.refresh_from_db()


def session_link(session: FeedbackSession, submission: Submission, user) -> FeedbackSession:
    """Declare that ``submission`` (agentic, same owner, same profile) was found with this session's feedback.

    Linking closes the session (no further runs) and cannot be undone, so a cost once shown cannot be hidden again.
    A submission may link several sessions (their costs add up); a session links one submission.
    """
    _owner_only(session.submitter, user)
    if submission.submitter_id != session.submitter_id:
        raise NotAllowed("a session links only to a submission of the same submitter")
    if submission.protocol != AGENTIC:
        raise Refused(
            f"submission #{submission.pk} declares the {submission.protocol} protocol; only agentic "
            "submissions link feedback sessions",
            "submission",
        )
    if submission.profile_id != session.profile_id:
        raise Refused(
            f"session {session.pk} ran on {session.profile.slug}, submission #{submission.pk} on "
            f"{submission.profile.slug}",
            "submission",
        )
    with transaction.atomic():
        locked = FeedbackSession.objects.select_for_update().get(pk=session.pk)
        if locked.submission_id is not None:
            if locked.submission_id == submission.pk:
                return locked
            raise Refused(f"session {session.pk} is already linked to submission #{locked.submission_id}", "session")
        now = timezone.now()
        FeedbackSession.objects.filter(pk=session.pk).update(
            submission=submission, linked_at=now, closed_at=locked.closed_at or now
        )
        feedback_changed.send(FeedbackSession, submission_id=submission.pk)  # its runs count as its feedback now
    session.refresh_from_db()
    return session


def _owner_only(submitter: Submitter, user) -> None:
    if not (user and user.is_authenticated and (user.is_staff or submitter.user_id == user.pk)):
        raise NotAllowed("only the owner does that")


# --- quota -----------------------------------------------------------------------------------------------------------


def quota_limits(submitter: Submitter) -> dict:
    override = FeedbackQuota.objects.filter(submitter=submitter).first()
    daily = override.daily if override and override.daily is not None else conf.get("PKB_FEEDBACK_QUOTA_DAILY")
    concurrent = (
        override.concurrent
        if override and override.concurrent is not None
        else conf.get("PKB_FEEDBACK_QUOTA_CONCURRENT")
    )
    return {"daily": daily, "concurrent": concurrent}


def quota_usage(submitter: Submitter, now=None) -> dict:
    now = now or timezone.now()
    runs = FeedbackRun.objects.filter(submitter=submitter)
    return {
        "daily": runs.filter(created_at__gt=now - timedelta(days=1), refunded_at__isnull=True).count(),
        "concurrent": runs.filter(status__in=(QUEUED, RUNNING)).count(),
    }


def quota_reserve(submitter: Submitter, now) -> None:
    """One feedback run, or FeedbackQuotaExceeded. Call inside the transaction that inserts the run: the submitter
    row is locked first, so parallel requests of one user count one after the other (no count-then-insert race)."""
    Submitter.objects.select_for_update().filter(pk=submitter.pk).first()
    limits = quota_limits(submitter)
    usage = quota_usage(submitter, now)
    if usage["concurrent"] + 1 > limits["concurrent"]:
        raise FeedbackQuotaExceeded(
            f"{usage['concurrent']} of your feedback runs are queued or running; at most "
            f"{limits['concurrent']} at once. Next free slot: when one of them finishes."
        )
    if usage["daily"] + 1 > limits["daily"]:
        oldest = (
            FeedbackRun.objects.filter(
                submitter=submitter, refunded_at__isnull=True, created_at__gt=now - timedelta(days=1)
            )
            .order_by("created_at")
            .values_list("created_at", flat=True)
            .first()
        )
        free_at = oldest + timedelta(days=1) if oldest else None
        raise FeedbackQuotaExceeded(
            f"{usage['daily']} of your {limits['daily']} feedback runs per 24 hours are used"
            + (f"; next free slot at {free_at:%Y-%m-%d %H:%M} UTC" if free_at else ""),
            free_at,
        )


def quota_status(submitter: Submitter) -> dict:
    return {"limits": quota_limits(submitter), "usage": quota_usage(submitter)}


# --- runs ------------------------------------------------------------------------------------------------------------


def _problem(key) -> Problem:
    text = str(key or "").strip()
    problem = (
        Problem.objects.filter(pk=int(text)).first() if text.isdigit() else Problem.objects.filter(stem=text).first()
    )
    if problem is None:
        raise Refused(f"no problem {key!r}", "problem")
    if not problem.implemented:
        raise Refused(f"problem {problem.stem} is not implemented here yet", "problem")
    return problem


def _side(value, name: str) -> int:
    if value in (None, ""):
        return 1024
    try:
        side = int(value)
    except (TypeError, ValueError):
        raise Refused(f"{name} must be an integer", name) from None
    if not 1 <= side <= MAX_SIDE:
        raise Refused(f"{name} must lie in 1..{MAX_SIDE}", name)
    return side


def _code(code, filename: str) -> tuple[str, str]:
    if isinstance(code, bytes):
        try:
            code = code.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(f"{filename} is not UTF-8 text", "code") from None
    if not isinstance(code, str) or not code.strip():
        raise Refused("the candidate file is empty", "code")
    size = len(code.encode("utf-8"))
    if size > settings.PKB_MAX_FILE_BYTES:
        raise Refused(f"{filename} is {size:,} bytes; the limit is {settings.PKB_MAX_FILE_BYTES:,}", "code")
    return code, hashlib.sha256(code.encode("utf-8")).hexdigest()


def _filename(name: str, problem: Problem) -> str:
    base = (name or "").replace("\\", "/").split("/")[-1].strip()
    if not base.endswith(".py") or base.startswith("."):
        base = f"{problem.stem}_candidate.py"
    return base[:300]


def run_create(submitter: Submitter, session_id, problem_key, code, filename: str = "", M=None, N=None) -> FeedbackRun:
    """Queue one feedback run in an open session of ``submitter``: quota reserved in the same transaction."""
    problem = _problem(problem_key)
    code, digest = _code(code, filename or "candidate")
    M, N = _side(M, "M"), _side(N, "N")
    with transaction.atomic():
        session = (
            FeedbackSession.objects.select_for_update()
            .select_related("profile")
            .filter(pk=session_id if str(session_id).isdigit() else -1, submitter=submitter)
            .first()
        )
        if session is None:
            raise Refused(f"session {session_id!r} is not one of yours", "session")
        if not session.is_open:
            raise Refused(
                f"session {session.pk} is closed"
                + (f" (linked to submission #{session.submission_id})" if session.submission_id else ""),
                "session",
            )
        now = timezone.now()
        quota_reserve(submitter, now)
        run = _insert(
            kind=FeedbackRun.FEEDBACK,
            session=session,
            submitter=submitter,
            profile=session.profile,
            problem=problem,
            code=code,
            sha256=digest,
            filename=_filename(filename, problem),
            M=M,
            N=N,
            trials=session.profile.trials,
            now=now,
        )
    log.info("feedback run %s: %s in session %s on %s", run.pk, problem.stem, session.pk, session.profile.slug)
    return run


def profile_run_create(candidate: Candidate, user) -> FeedbackRun:
    """Queue a profile run of one file of a submission (owner or staff), on the submission's profile."""
    submission = candidate.submission
    if not (submission.is_owner(user) or (user and user.is_staff)):
        raise NotAllowed("only the owner profiles a submission's code")
    if not candidate.problem.implemented:
        raise Refused(f"problem {candidate.problem.stem} is not implemented here yet", "candidate")
    with transaction.atomic():
        now = timezone.now()
        quota_reserve(submission.submitter, now)
        run = _insert(
            kind=FeedbackRun.PROFILE,
            candidate=candidate,
            submitter=submission.submitter,
            profile=submission.profile,
            problem=candidate.problem,
            code=candidate.code,
            sha256=candidate.sha256,
            filename=candidate.filename.split("/")[-1],
            M=1024,
            N=1024,
            trials=1,
            now=now,
        )
    return run


def _insert(
    kind, submitter, profile, problem, code, sha256, filename, M, N, trials, now, session=None, candidate=None
) -> FeedbackRun:
    trials = max(1, min(int(trials), seeds.COUNT - 1))
    run = FeedbackRun.objects.create(
        kind=kind,
        session=session,
        candidate=candidate,
        submitter=submitter,
        profile=profile,
        problem=problem,
        filename=filename,
        code=code,
        sha256=sha256,
        M=M,
        N=N,
        world_size=profile.world_size,
        device=profile.device,
        trials=trials,
        seeds=seeds.for_run(problem.id, trials),
        max_attempts=conf.get("PKB_FEEDBACK_MAX_ATTEMPTS"),
        enqueued_at=now,
        created_at=now,
    )
    LEASE.send_on_commit(run.pk, queue_for(profile.slug))
    return run


# --- lifecycle on workers --------------------------------------------------------------------------------------------


def run_claim(run_id: int, worker: str, now=None) -> FeedbackRun | None:
    return LEASE.claim(run_id, worker, now)


def run_heartbeat(run_id: int, worker: str) -> bool:
    return LEASE.heartbeat(run_id, worker)


def run_finish(run_id: int, worker: str, document: dict, trace_gz: bytes | None = None) -> FeedbackRun | None:
    """Store the judge's document as feedback, metered; only the lease holder writes, exactly once."""
    with transaction.atomic():
        run = LEASE.held(run_id, worker, related=("profile",))
        if run is None:
            return None
        if document.get("verdict") == schema.INFRA_ERROR:
            return _infra_failure(run, document.get("message", schema.INFRA_ERROR))
        wall_ms = max(0, round(float(document.get("wall_s") or 0.0) * 1000))
        # GPU time: one GPU per rank, or one GPU for all of a shared-device world's ranks
        gpu_ms = (1 if run.profile.shared_device else run.world_size) * wall_ms if run.device == "cuda" else 0
        profile = document.get("profile") if isinstance(document.get("profile"), dict) else None
        summary = (profile.get("summary") or {"error": profile.get("error", "no summary")}) if profile else None
        LEASE.done(
            run,
            verdict=str(document.get("verdict"))[:20],
            document=document,
            wall_ms=wall_ms,
            gpu_ms=gpu_ms,
            feedback=report.build(document, wall_ms, gpu_ms, run.seeds),
            summary=summary,
            trace_gz=trace_gz,
        )
        linked = FeedbackSession.objects.filter(pk=run.session_id).values_list("submission_id", flat=True).first()
        if linked:  # a run queued before its session was linked lands after: the submission's count follows
            feedback_changed.send(FeedbackRun, submission_id=linked)
    run.refresh_from_db()
    return run


def run_refused(run_id: int, worker: str, message: str) -> FeedbackRun | None:
    """The judge refused the arguments (exit status 2: e.g. a world size the problem does not allow): no verdict,
    no retry, refunded."""
    with transaction.atomic():
        run = LEASE.held(run_id, worker)
        if run is None:
            return None
        LEASE.failed(run, message, refunded_at=timezone.now(), feedback={"error": message[:2000]})
    run.refresh_from_db()
    return run


def run_infra_error(run_id: int, worker: str, message: str) -> FeedbackRun | None:
    return run_finish(run_id, worker, {"verdict": schema.INFRA_ERROR, "message": message})


def _infra_failure(run: FeedbackRun, message: str) -> FeedbackRun:
    """The platform failed this attempt: never the candidate's verdict, never metered; retried, then refunded."""
    LEASE.retry_or_fail(
        run,
        message,
        infra_failures=F("infra_failures") + 1,
        on_fail={"refunded_at": timezone.now(), "feedback": {"error": f"platform failure, not counted: {message}"}},
    )
    run.refresh_from_db()
    return run


def runs_reap(now=None, broker_depth=None, resend_all: bool = False) -> dict:
    """Re-queue runs whose worker lost its lease; re-send messages a broker lost (per feedback queue)."""

    def lost(run: FeedbackRun, message: str) -> str:
        return "requeued" if _infra_failure(run, message).status == QUEUED else "failed"

    return LEASE.reap(lost, now, broker_depth, resend_all)
