"""The platform-measured costs of a submission, defined once: the pages, the API and the exports read them here.

- **Rank-seconds** of judging: over every result of the submission's own evaluations, W x the judge's wall time
  (``wall_s`` of its document). On a GPU profile each rank holds one GPU, so these are its **GPU-seconds**; a CPU
  profile has no GPU-seconds (shown as none, never as rank-seconds under a GPU name). Stored in
  ``Submission.gpu_seconds`` (the column keeps its old name; read it through :func:`of` / :func:`for_submissions`).
- **Feedback runs**: evaluations that informed the submission, counted by the platform, three kinds added up:
  runs of its linked feedback sessions that returned feedback (agentic protocol), final results of uploads marked
  ``--feedback-for`` it, and final results of its own re-runs. Platform failures (infra errors, refunded runs) never
  count. Stored in ``Submission.feedback_runs``.
- **Feedback wall / rank-seconds**: the judge's wall time of its linked sessions' counted runs, and W x that.

:func:`refresh` recomputes the stored two after any result or link (services and feedback services call it).
"""

from __future__ import annotations

import dataclasses

from django.db.models import Count, F, Q, Sum

from evaluator.contract.schema import INFRA_ERROR
from leaderboard.catalogue.units import GPU_UNIT, RANK_UNIT, SHORT_UNIT, unit  # noqa: F401 (read here too)
from leaderboard.feedback.models import FeedbackRun, FeedbackSession
from leaderboard.jobs.models import Result
from leaderboard.submissions.models import Submission


@dataclasses.dataclass(frozen=True)
class Cost:
    device: str
    rank_seconds: float
    feedback_runs: int
    feedback_wall_s: float = 0.0
    feedback_rank_seconds: float = 0.0
    sessions: int = 0

    @property
    def unit(self) -> str:
        return unit(self.device)

    @property
    def short_unit(self) -> str:
        return SHORT_UNIT[self.unit]

    @property
    def gpu_seconds(self) -> float | None:
        return self.rank_seconds if self.device == "cuda" else None

    @property
    def feedback_gpu_seconds(self) -> float | None:
        return self.feedback_rank_seconds if self.device == "cuda" else None

    def as_dict(self) -> dict:
        """The API's ``cost`` object."""
        return {
            "unit": self.unit,
            "rank_seconds": round(self.rank_seconds, 3),
            "gpu_seconds": None if self.gpu_seconds is None else round(self.gpu_seconds, 3),
            "feedback_runs": self.feedback_runs,
            "feedback_sessions": self.sessions,
            "feedback_wall_s": round(self.feedback_wall_s, 3),
            "feedback_rank_seconds": round(self.feedback_rank_seconds, 3),
            "feedback_gpu_seconds": None if self.feedback_gpu_seconds is None else round(self.feedback_gpu_seconds, 3),
        }


EXPORT_COLUMNS = [
    "cost_unit",
    "measured_rank_seconds",
    "measured_gpu_seconds",
    "measured_feedback_runs",
    "measured_feedback_wall_s",
]


def export_values(cost: Cost) -> list:
    """The CSV/JSON export's cost cells, in EXPORT_COLUMNS' order (seconds to 0.1, as the pages show them)."""
    return [
        cost.unit,
        round(cost.rank_seconds, 1),
        None if cost.gpu_seconds is None else round(cost.gpu_seconds, 1),
        cost.feedback_runs,
        round(cost.feedback_wall_s, 1),
    ]


def for_submissions(submission_ids) -> dict[int, Cost]:
    """Each submission's Cost (two queries, whatever the number of ids)."""
    ids = list(submission_ids)
    if not ids:
        return {}
    sessions = _sessions(ids)
    out = {}
    for row in Submission.objects.filter(pk__in=ids).values("pk", "gpu_seconds", "feedback_runs", "profile__device"):
        s = sessions.get(row["pk"], {})
        out[row["pk"]] = Cost(
            device=row["profile__device"],
            rank_seconds=row["gpu_seconds"] or 0.0,
            feedback_runs=row["feedback_runs"],
            feedback_wall_s=s.get("wall_ms", 0) / 1000,
            feedback_rank_seconds=s.get("rank_ms", 0) / 1000,
            sessions=s.get("sessions", 0),
        )
    return out


def stored(submission) -> Cost:
    """The stored costs of a loaded submission (no query when its profile is loaded; no session wall)."""
    return Cost(
        device=submission.profile.device,
        rank_seconds=submission.gpu_seconds or 0.0,
        feedback_runs=submission.feedback_runs,
    )


def api_fields(submission) -> dict:
    """The API's cost fields of a submission (its serializer and the leaderboard's hand-built rows alike)."""
    return cost_fields(stored(submission))


def cost_fields(cost: Cost) -> dict:
    return {
        "cost_unit": cost.unit,
        "rank_seconds": round(cost.rank_seconds, 3),
        "gpu_seconds": None if cost.gpu_seconds is None else round(cost.gpu_seconds, 3),
        "feedback_runs": cost.feedback_runs,
    }


def of(submission) -> Cost:
    return for_submissions([submission.pk])[submission.pk]


def _sessions(submission_ids: list[int]) -> dict[int, dict]:
    """Per submission: its linked sessions, and their counted runs' wall and rank milliseconds (one query)."""
    counted = Q(runs__kind=FeedbackRun.FEEDBACK, runs__status=FeedbackRun.DONE)
    rows = (
        FeedbackSession.objects.filter(submission_id__in=submission_ids)
        .values("submission_id")
        .annotate(
            n_sessions=Count("id", distinct=True),
            n_runs=Count("runs", filter=counted),
            sum_wall=Sum("runs__wall_ms", filter=counted),
            sum_rank=Sum(F("runs__wall_ms") * F("runs__world_size"), filter=counted),
        )
    )
    return {
        r["submission_id"]: {
            "sessions": r["n_sessions"],
            "runs": r["n_runs"],
            "wall_ms": r["sum_wall"] or 0,
            "rank_ms": r["sum_rank"] or 0,
        }
        for r in rows
    }


def feedback_runs(submission_id: int) -> int:
    """The definition of the feedback-run count (module docstring), from the tables (three queries)."""
    final = Result.objects.exclude(verdict=INFRA_ERROR)
    uploads = final.filter(job__submission__feedback_for_id=submission_id).count()
    reruns = final.filter(job__submission_id=submission_id, run__gt=1).count()
    return uploads + reruns + _sessions([submission_id]).get(submission_id, {}).get("runs", 0)


def rank_seconds(submission_id: int) -> float:
    """W x wall over every result of the submission's own evaluations (``Result.gpu_seconds`` holds W x wall)."""
    return Result.objects.filter(job__submission_id=submission_id).aggregate(s=Sum("gpu_seconds"))["s"] or 0.0


def refresh(submission_id: int) -> None:
    """Store both measured costs of a submission, and the feedback count of the one it was feedback for."""
    Submission.objects.filter(pk=submission_id).update(
        gpu_seconds=rank_seconds(submission_id), feedback_runs=feedback_runs(submission_id)
    )
    target = Submission.objects.filter(pk=submission_id).values_list("feedback_for_id", flat=True).first()
    if target:
        Submission.objects.filter(pk=target).update(feedback_runs=feedback_runs(target))
