"""Reads of the feedback app shared by pages, the API and template tags; visibility rules live here and on models."""

from __future__ import annotations

from django.db.models import Count, F, Q, Sum
from django.http import Http404

from leaderboard.catalogue import units
from leaderboard.feedback.models import FeedbackRun, FeedbackSession
from leaderboard.submissions import transcripts
from leaderboard.submissions.models import Submission, Transcript

DONE = FeedbackRun.DONE


def session_get(pk, user) -> FeedbackSession:
    session = FeedbackSession.objects.select_related("submitter__user", "profile", "submission").filter(pk=pk).first()
    if session is None or not session.visible_to(user):
        raise Http404("no such feedback session")
    return session


def sessions_of(user) -> list[FeedbackSession]:
    return list(FeedbackSession.objects.filter(submitter__user=user).select_related("profile")[:200])


def run_get(pk, user) -> FeedbackRun:
    run = FeedbackRun.objects.select_related("submitter", "profile", "problem", "session").filter(pk=pk).first()
    if run is None or not run.visible_to(user):
        raise Http404("no such feedback run")
    return run


def run_dict(run: FeedbackRun, request=None) -> dict:
    """What the API returns for a run (its owner only): status, then the structured feedback once finished."""
    url = f"/api/v1/feedback/runs/{run.pk}/"
    out = {
        "id": run.pk,
        "kind": run.kind,
        "status": run.status,
        "session": run.session_id,
        "problem": run.problem.stem,
        "problem_id": run.problem_id,
        "profile": run.profile.slug,
        "queue": run.queue_name,
        "world_size": run.world_size,
        "device": run.device,
        "M": run.M,
        "N": run.N,
        "trials": run.trials,
        "seeds": run.seeds,
        "filename": run.filename,
        "sha256": run.sha256,
        "url": request.build_absolute_uri(url) if request else url,
        "created_at": run.created_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "attempts": run.attempts,
        "platform_retries": run.infra_failures,
        "refunded": run.refunded_at is not None,
        "verdict": run.verdict or None,
        "metering": {
            "counted": run.kind == run.FEEDBACK and run.status == run.DONE,
            "wall_ms": run.wall_ms,
            "gpu_ms": run.gpu_ms,
            "wall_s": run.wall_ms / 1000,
            "gpu_seconds": run.gpu_ms / 1000,
        },
        "feedback": run.feedback or None if run.finished else None,
    }
    if run.kind == run.PROFILE:
        out["summary"] = run.summary
        out["trace_url"] = f"/feedback/runs/{run.pk}/trace.json.gz" if run.trace_gz else None
    return out


def sessions_dicts(sessions: list[FeedbackSession]) -> list[dict]:
    """session_dict for a list, the metering totals of all in one query."""
    totals = session_totals([s.pk for s in sessions])
    return [session_dict(s, with_runs=False, totals=totals) for s in sessions]


def session_dict(session: FeedbackSession, with_runs: bool = True, totals: dict | None = None) -> dict:
    totals = (totals if totals is not None else session_totals([session.pk])).get(
        session.pk, {"runs": 0, "wall_ms": 0, "gpu_ms": 0, "rank_ms": 0}
    )
    out = {
        "id": session.pk,
        "profile": session.profile.slug,
        "label": session.label,
        "open": session.is_open,
        "created_at": session.created_at,
        "closed_at": session.closed_at,
        "submission": session.submission_id,
        "linked_at": session.linked_at,
        "url": session.get_absolute_url(),
        "metering": {
            "runs": totals["runs"],
            "wall_ms": totals["wall_ms"],
            "gpu_ms": totals["gpu_ms"],
            "wall_s": totals["wall_ms"] / 1000,
            "gpu_seconds": totals["gpu_ms"] / 1000,
            "gpu_hours": totals["gpu_ms"] / 3.6e6,
            # W x wall in the profile's unit (leaderboard/scoring/costs.py): GPU-seconds, or rank-seconds on CPU
            "device_seconds": totals["rank_ms"] / 1000,
            "unit": units.unit(session.profile.device),
            "rule": "runs that returned feedback; wall = the judge's wall_s; device_seconds = W x wall, in unit "
            "(GPU-seconds on GPU profiles, rank-seconds on CPU ones, where gpu_seconds is 0); "
            "platform failures are neither counted nor charged",
        },
    }
    if with_runs:
        out["runs"] = [
            {
                "id": r.pk,
                "problem": r.problem.stem,
                "status": r.status,
                "verdict": r.verdict or None,
                "wall_ms": r.wall_ms,
                "gpu_ms": r.gpu_ms,
                "device_ms": r.wall_ms * r.world_size,
                "created_at": r.created_at,
                "url": f"/api/v1/feedback/runs/{r.pk}/",
            }
            for r in session.runs.select_related("problem").order_by("id")
        ]
    return out


def profile_runs_of(submission: Submission) -> list[FeedbackRun]:
    return list(
        FeedbackRun.objects.filter(candidate__submission=submission, kind=FeedbackRun.PROFILE)
        .select_related("candidate", "problem")
        .defer(
            "trace_gz",
            "code",
            "document",
            "candidate__code",
            "problem__reference_source",
            "problem__reference_html",
            "problem__docstring",
        )
        .order_by("-id")[:20]
    )


def session_totals(session_ids) -> dict[int, dict]:
    """Metering per session: runs that returned feedback, their wall and GPU milliseconds, and W x wall (rank_ms:
    the GPU milliseconds on a GPU profile, rank milliseconds on a CPU one; leaderboard/scoring/costs.py) as exact
    integer sums."""
    rows = (
        FeedbackRun.objects.filter(session_id__in=list(session_ids), kind=FeedbackRun.FEEDBACK, status=DONE)
        .values("session_id")
        .annotate(n=Count("id"), wall=Sum("wall_ms"), gpu=Sum("gpu_ms"), rank=Sum(F("wall_ms") * F("world_size")))
    )
    return {
        r["session_id"]: {"runs": r["n"], "wall_ms": r["wall"] or 0, "gpu_ms": r["gpu"] or 0, "rank_ms": r["rank"] or 0}
        for r in rows
    }


def measured_cost(submission_ids) -> dict[int, dict]:
    """Per submission: the sum over its linked sessions (one query). Absent: no session linked."""
    ids = list(submission_ids)
    if not ids:
        return {}
    rows = (
        FeedbackSession.objects.filter(submission_id__in=ids)
        .values("submission_id", "profile__device")
        .annotate(
            n_sessions=Count("id", distinct=True),
            n_runs=Count("runs", filter=Q(runs__kind=FeedbackRun.FEEDBACK, runs__status=DONE)),
            sum_wall=Sum("runs__wall_ms", filter=Q(runs__kind=FeedbackRun.FEEDBACK, runs__status=DONE)),
            sum_gpu=Sum("runs__gpu_ms", filter=Q(runs__kind=FeedbackRun.FEEDBACK, runs__status=DONE)),
            sum_rank=Sum(
                F("runs__wall_ms") * F("runs__world_size"), filter=Q(runs__kind=FeedbackRun.FEEDBACK, runs__status=DONE)
            ),
        )
    )
    out = {}
    for r in rows:  # a link requires the session's profile to be the submission's: one device per submission
        wall, gpu, rank = r["sum_wall"] or 0, r["sum_gpu"] or 0, r["sum_rank"] or 0
        out[r["submission_id"]] = {
            "sessions": r["n_sessions"],
            "runs": r["n_runs"],
            "wall_ms": wall,
            "gpu_ms": gpu,
            "wall_s": wall / 1000,
            "gpu_seconds": gpu / 1000,
            "gpu_hours": gpu / 3.6e6,
            # device-seconds in the unit leaderboard/scoring/costs.py names (rank·s on CPU)
            "device_seconds": rank / 1000,
            "unit": units.SHORT_UNIT[units.unit(r["profile__device"])],
        }
    return out


def transcript_steps(transcript: Transcript, user) -> list[dict]:
    """The transcript's steps, each with the metered feedback runs it refers to that belong to this submission's
    linked sessions (run pages stay their owner's; the verdict and wall time are shown in place)."""
    steps = transcripts.steps(transcript.content)
    wanted = {run for s in steps for run in s["runs"]}
    runs = {}
    if wanted:
        runs = {
            r["id"]: r
            for r in FeedbackRun.objects.filter(pk__in=wanted, session__submission=transcript.submission).values(
                "id", "status", "verdict", "wall_ms", "problem__stem", "submitter__user_id"
            )
        }
    owner = bool(user and user.is_authenticated and (user.is_staff or transcript.submission.is_owner(user)))
    for s in steps:
        s["metered"] = [dict(runs[r], link=owner) for r in s["runs"] if r in runs]
    return steps
