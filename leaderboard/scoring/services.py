"""Writes of the materialised tables: a submission's ProblemScore rows, solve rates and its leaderboard row."""
from __future__ import annotations

import math

from django.db import transaction
from django.utils import timezone

from evaluator import schema
from evaluator.schema import CORRECT, INFRA_ERROR
from leaderboard.catalogue.models import HardwareProfile, Problem
from leaderboard.jobs.models import EvaluationJob, Result
from leaderboard.scoring.models import LeaderboardEntry, ProblemScore, ProblemStat
from leaderboard.submissions.models import Candidate, Submission

QUEUED, RUNNING, DONE, FAILED = (EvaluationJob.QUEUED, EvaluationJob.RUNNING, EvaluationJob.DONE,
                                 EvaluationJob.FAILED)


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
    """Platform-measured cost, as leaderboard/scoring/costs.py defines it (rank-seconds, feedback runs)."""
    from leaderboard.scoring import costs

    costs.refresh(submission.pk)
