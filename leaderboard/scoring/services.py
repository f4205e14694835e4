"""Writes of the materialised tables: a submission's ProblemScore rows, solve rates and its leaderboard row."""

from __future__ import annotations

import math

from django.db import transaction
from django.utils import timezone

from evaluator.contract import schema
from evaluator.contract.schema import CORRECT, INFRA_ERROR
from leaderboard.catalogue.models import HardwareProfile, Problem
from leaderboard.jobs.models import EvaluationJob, Result
from leaderboard.scoring import costs
from leaderboard.scoring.models import Audit, LeaderboardEntry, ProblemScore, ProblemStat
from leaderboard.submissions.models import Candidate, Submission

QUEUED, RUNNING, DONE, FAILED = (EvaluationJob.QUEUED, EvaluationJob.RUNNING, EvaluationJob.DONE, EvaluationJob.FAILED)


def scores_refresh(submission: Submission, problem_ids: list[int] | None = None) -> None:
    """Recompute the submission's ProblemScore rows (all 87, or the given problems) from its jobs' current results."""
    ids = list(problem_ids) if problem_ids is not None else list(Problem.objects.values_list("id", flat=True))
    attempts: dict[int, list[dict]] = {pid: [] for pid in ids}
    jobs = {
        j.candidate_id: j for j in EvaluationJob.objects.filter(submission=submission, candidate__problem_id__in=ids)
    }
    results = {}
    if jobs:
        for r in Result.objects.filter(job__in=list(jobs.values())).exclude(verdict=INFRA_ERROR).order_by("id"):
            results[(r.job_id, r.run)] = r
    for c in Candidate.objects.filter(submission=submission, problem_id__in=ids).only("id", "problem_id", "attempt"):
        job = jobs.get(c.id)
        attempts[c.problem_id].append(
            {"attempt": c.attempt, "job": job, "result": results.get((job.pk, job.run)) if job else None}
        )
    existing = {s.problem_id: s for s in ProblemScore.objects.filter(submission=submission, problem_id__in=ids)}
    ranked = HardwareProfile.objects.filter(pk=submission.profile_id).values_list("ranked", flat=True).get()
    audits = dict(Audit.objects.filter(submission=submission, problem_id__in=ids).values_list("problem_id", "verdict"))
    to_create, to_update = [], []
    for pid in ids:
        score = existing.get(pid) or ProblemScore(submission=submission, problem_id=pid)
        _score_fill(score, submission, attempts[pid], ranked)
        _audit_apply(score, audits.get(pid, ""))
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
    ProblemStat.objects.bulk_create(
        [ProblemStat(problem_id=pid, profile_id=profile_id, protocol=protocol) for pid in ids], ignore_conflicts=True
    )
    with transaction.atomic():
        stats = list(
            ProblemStat.objects.select_for_update()
            .filter(problem_id__in=ids, profile_id=profile_id, protocol=protocol)
            .order_by("problem_id")
        )
        rows = {
            row["problem_id"]: row
            for row in ProblemScore.objects.filter(
                problem_id__in=ids, profile_id=profile_id, protocol=protocol, listed=True
            )
            .exclude(status=ProblemScore.NO_CANDIDATE)
            .values("problem_id")
            .annotate(
                tried=Count("id"),
                solved=Count("id", filter=Q(correct=True)),
                fast=Count("id", filter=Q(faster=True)),
                best=Max("speedup", filter=Q(correct=True)),
                best_peak=Max("peak_fraction", filter=Q(correct=True, flagged=False)),
            )
        }
        now = timezone.now()
        for stat in stats:
            row = rows.get(stat.problem_id, {})
            stat.tried, stat.solved = row.get("tried", 0), row.get("solved", 0)
            stat.faster, stat.best_speedup, stat.updated_at = row.get("fast", 0), row.get("best"), now
            stat.best_peak_fraction = row.get("best_peak")
        ProblemStat.objects.bulk_update(
            stats, ["tried", "solved", "faster", "best_speedup", "best_peak_fraction", "updated_at"]
        )


SCORE_FIELDS = [
    "profile",
    "protocol",
    "listed",
    "status",
    "attempt",
    "result",
    "correct",
    "faster",
    "faster_1_5",
    "faster_2_0",
    "flagged",
    "speedup",
    "speedup_lo",
    "speedup_hi",
    "attempts_correct",
    "attempts_total",
    "peak_fraction",
    "peak_fraction_lo",
    "peak_fraction_hi",
    "peak_note",
    "audit",
]


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
    # "faster" is the judge's decision (evaluator/contract/verdict.py: already false when the result carries any flag),
    # taken as stored; the site only withholds it from a result that does not count as correct.
    score.faster = bool(score.correct and result.faster)
    # fast_p's bars likewise: what the judge decided for each (older documents: its stored "faster" and interval).
    at = schema.faster_at(
        (result.document or {}).get("timing") if result and isinstance(result.document, dict) else None
    )
    score.faster_1_5 = bool(score.faster and at[schema.bar_key(1.5)])
    score.faster_2_0 = bool(score.faster and at[schema.bar_key(2.0)])
    score.speedup = result.speedup if result else None
    score.speedup_lo = result.speedup_lo if result else None
    score.speedup_hi = result.speedup_hi if result else None
    score.peak_fraction, score.peak_fraction_lo, score.peak_fraction_hi, score.peak_note = peak_of(result)


def _audit_apply(score: ProblemScore, verdict: str) -> None:
    """A staff audit of the cell: shown with it; a reward hack counts as a flag (never correct, never faster)."""
    score.audit = verdict
    if verdict == Audit.REWARD_HACK:
        score.flagged, score.correct, score.faster = True, False, False
        score.faster_1_5 = score.faster_2_0 = False


def _finite(value):
    return (
        float(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        else None
    )


def peak_of(result: Result | None) -> tuple:
    """(peak fraction, low, high, why none) of a result, from the judge's timing document (evaluator/timing/peak.py
    writes ``peak_fraction``). A document from before the judge wrote it, whose floor applied, gives the fraction
    without an interval; a result without timing gives nothing and no note (there was nothing to time)."""
    timing = result.document.get("timing") if result is not None and isinstance(result.document, dict) else None
    if not isinstance(timing, dict):
        return None, None, None, ""
    record = timing.get("peak_fraction")
    if isinstance(record, dict):
        value, ci = _finite(record.get("value")), record.get("ci")
        if record.get("applies") and value is not None:
            lo, hi = (_finite(ci[0]), _finite(ci[1])) if isinstance(ci, list) and len(ci) == 2 else (None, None)
            return value, lo, hi, ""
        return None, None, None, str(record.get("reason") or "no speed-of-light floor applies")[:300]
    light = timing.get("speed_of_light")
    if isinstance(light, dict):
        floor, cand = _finite(light.get("floor_ms")), _finite(timing.get("candidate_ms"))
        if light.get("applies") and floor and cand:
            return floor / cand, None, None, ""
        return None, None, None, str(light.get("reason") or "no speed-of-light floor applies")[:300]
    return None, None, None, "no speed-of-light floor was computed for this run"


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
    scores = list(
        ProblemScore.objects.filter(submission=submission).only(
            "status", "correct", "faster", "faster_1_5", "faster_2_0", "flagged", "speedup", "peak_fraction", "audit"
        )
    )
    correct = [s for s in scores if s.correct]
    timed = [s for s in correct if not s.flagged]  # a flagged timing never counts, even where correctness stands
    speedups = [s.speedup for s in timed if s.speedup and s.speedup > 0]
    peaks = [s.peak_fraction for s in timed if s.peak_fraction and s.peak_fraction > 0]
    total = Problem.objects.count() or 87
    profile = HardwareProfile.objects.get(pk=submission.profile_id)
    audit = Audit.objects.filter(submission=submission, problem__isnull=True).values_list("verdict", flat=True).first()
    values = dict(
        profile_id=submission.profile_id,
        protocol=submission.protocol,
        backend=submission.backend,
        attempts_k=submission.attempts_k,
        listed=submission.visibility == "public",
        # A submission the staff read as a reward hack is shown without a rank, as a flagged one is.
        ranked=(
            submission.visibility == "public"
            and profile.ranked
            and not submission.flagged
            and audit != Audit.REWARD_HACK
        ),
        audit=audit or "",
        audited_results=sum(1 for s in scores if s.audit),
        geomean_peak_fraction=_geomean(peaks),
        peak_problems=len(peaks),
        correct=len(correct),
        faster=sum(1 for s in correct if s.faster),
        fast_1_0=sum(1 for s in correct if s.faster) / total,
        # Counted from the judge's decisions: a result whose "faster" was withheld is in none of the three.
        fast_1_5=sum(1 for s in correct if s.faster and s.faster_1_5) / total,
        fast_2_0=sum(1 for s in correct if s.faster and s.faster_2_0) / total,
        geomean_speedup=_geomean(speedups),
        judged=sum(
            1
            for s in scores
            if s.status not in (ProblemScore.PENDING, ProblemScore.NOT_JUDGED, ProblemScore.NO_CANDIDATE, INFRA_ERROR)
        ),
        pending=sum(1 for s in scores if s.status == ProblemScore.PENDING),
        flagged_results=sum(1 for s in scores if s.flagged),
        updated_at=timezone.now(),
    )
    entry, _ = LeaderboardEntry.objects.update_or_create(submission=submission, defaults=values)
    _costs_refresh(submission)
    return entry


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(x) for x in values) / len(values)) if values else None


def audit_record(submission: Submission, problem_id: int | None, verdict: str, note: str, auditor) -> Audit:
    """Record (or change) the staff's audit of one problem of a submission, or of the whole submission, and refresh
    what it changes: the cell (a reward hack counts as a flag), the solve rates, the leaderboard row."""
    if not (auditor and auditor.is_staff):
        raise PermissionError("only staff record audits")
    if verdict not in dict(Audit.VERDICTS):
        raise ValueError(f"unknown audit verdict {verdict!r}")
    if problem_id is not None:
        attempted = attempted_problems(submission)
        if problem_id not in attempted:
            raise AuditRefused(problem_refusal(problem_id, attempted))
    result_id = None
    if problem_id is not None:
        result_id = (
            ProblemScore.objects.filter(submission=submission, problem_id=problem_id)
            .values_list("result_id", flat=True)
            .first()
        )
    with transaction.atomic():
        audit, created = Audit.objects.update_or_create(
            submission=submission,
            problem_id=problem_id,
            defaults={
                "verdict": verdict,
                "note": note,
                "auditor": auditor,
                "result_id": result_id,
                "updated_at": timezone.now(),
            },
        )
        audits_refresh(submission, problem_id)
    return audit


class AuditRefused(ValueError):
    """An audit naming a problem the submission has no candidate for (or no such problem): nothing is recorded."""


def attempted_problems(submission: Submission) -> dict[int, str]:
    """{problem id: stem} of the problems the submission has a candidate for: the ones an audit may name."""
    return dict(
        Candidate.objects.filter(submission=submission)
        .order_by("problem_id")
        .values_list("problem_id", "problem__stem")
        .distinct()
    )


def problem_refusal(problem_id: int, attempted: dict[int, str]) -> str:
    """Why an audit may not name ``problem_id``, naming the problems it may name."""
    why = (
        f"problem {problem_id} does not exist"
        if not Problem.objects.filter(pk=problem_id).exists()
        else f"this submission has no candidate for problem {problem_id}"
    )
    valid = ", ".join(f"{pid} ({stem})" for pid, stem in attempted.items()) or "none"
    return f"{why}; the problems it attempted: {valid} (or leave the problem empty to audit the whole submission)"


def audits_refresh(submission: Submission, problem_id: int | None) -> None:
    """After an audit is recorded or deleted: the scores it touches and the submission's row."""
    if problem_id is not None:
        scores_refresh(submission, [problem_id])
    entry_refresh(submission)


def _costs_refresh(submission: Submission) -> None:
    """Platform-measured cost, as leaderboard/scoring/costs.py defines it (rank-seconds, feedback runs)."""
    costs.refresh(submission.pk)


# --- the receivers of what the apps below announce (connected in leaderboard/scoring/apps.py) ------------------------


def on_results_changed(sender, submission_id: int, problem_ids: list[int], **_) -> None:
    """leaderboard/jobs/signals.py: a submission's evaluations of these problems changed (sent by
    leaderboard/jobs/services.py when a result is stored or a run fails for good or is re-queued)."""
    submission = Submission.objects.get(pk=submission_id)
    scores_refresh(submission, problem_ids)
    entry_refresh(submission)


def on_scores_stale(sender, submission: Submission, problem_ids: list[int] | None = None, **_) -> None:
    """leaderboard/submissions/signals.py: candidates or jobs of these problems (None: all) came or went."""
    scores_refresh(submission, problem_ids)
    entry_refresh(submission)


def on_listing_changed(sender, submission: Submission, **_) -> None:
    """leaderboard/submissions/signals.py: the submission's visibility changed."""
    ProblemScore.objects.filter(submission=submission).update(listed=submission.visibility == "public")
    problem_stats_refresh(Problem.objects.values_list("id", flat=True), submission.profile_id, submission.protocol)
    entry_refresh(submission)


def on_entry_stale(sender, submission: Submission, **_) -> None:
    """leaderboard/submissions/signals.py: a field the submission's leaderboard row shows changed."""
    entry_refresh(submission)


def on_feedback_changed(sender, submission_id: int, **_) -> None:
    """leaderboard/feedback/signals.py: the feedback that counts for the submission changed: its measured costs."""
    costs.refresh(submission_id)
