"""Reads for a submission's page and its live status, shared by the HTML views, the API and ``pkb submit --wait``:
its scores with every attempt (each attempt's job and current result), and its job counts with each file's verdict.
"""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count

from evaluator.contract import schema
from evaluator.contract.schema import INFRA_ERROR
from leaderboard.catalogue.models import Problem
from leaderboard.feedback import report
from leaderboard.jobs.models import EvaluationJob, Result
from leaderboard.jobs.public import public_text
from leaderboard.scoring.models import LeaderboardEntry, ProblemScore
from leaderboard.submissions.models import Candidate, Submission


def submission_grid(submission: Submission) -> list[dict]:
    """Per problem (all 87): the score and every attempt with its job and current result (five queries).

    Rows are plain dicts and tuples (no model instances for the 87 x k attempts): the page must stay fast.
    """
    problems = list(Problem.objects.order_by("id").values_list("id", "stem"))
    scores = {
        s.problem_id: s
        for s in ProblemScore.objects.filter(submission=submission).only(
            "problem_id",
            "status",
            "attempt",
            "correct",
            "faster",
            "flagged",
            "speedup",
            "speedup_lo",
            "speedup_hi",
            "peak_fraction",
            "peak_fraction_lo",
            "peak_fraction_hi",
            "peak_note",
            "audit",
        )
    }
    jobs = {
        row[1]: row
        for row in EvaluationJob.objects.filter(submission=submission).values_list(
            "id", "candidate_id", "status", "run", "last_error"
        )
    }
    results: dict = {}
    for row in (
        Result.objects.filter(job__submission=submission)
        .order_by("id")
        .values_list(
            "id",
            "job_id",
            "run",
            "verdict",
            "message",
            "flags",
            "document__timing__pairs__set_aside",
            "document__timing__crosscheck",
            "document__timing__pairs__probe",
            "document__timing__reference_blocks_spun_short",
            "document__timing__reference_spun_short_pairs",
        )
    ):
        results.setdefault((row[1], row[2]), []).append(row)
    attempts = defaultdict(list)
    for cid, pid, attempt in (
        Candidate.objects.filter(submission=submission).order_by("attempt").values_list("id", "problem_id", "attempt")
    ):
        attempts[pid].append(_attempt_cell(cid, attempt, jobs.get(cid), results))
    return [
        {"problem": {"id": pid, "stem": stem}, "score": scores.get(pid), "attempts": attempts.get(pid, [])}
        for pid, stem in problems
    ]


def _attempt_cell(candidate_id: int, attempt: int, job, results) -> dict:
    """One attempt: its job's status and the current run's final result (infra errors are retries, not verdicts)."""
    history = results.get((job[0], job[3]), []) if job else []
    final = next((r for r in reversed(history) if r[3] != schema.INFRA_ERROR), None)
    return {
        "candidate_id": candidate_id,
        "attempt": attempt,
        "judged": job is not None,
        "status": final[3] if final else (job[2] if job else "not_judged"),
        "result_id": final[0] if final else None,
        "message": public_text(final[4]) if final else "",
        "flags": final[5] if final else [],
        "retries": sum(1 for r in history if r[3] == schema.INFRA_ERROR),
        # Timing pairs whose cross-check was suspect, left out of the speedup (evaluator/timing/pairs.py, triage).
        "set_aside": len(final[6]) if final and isinstance(final[6], list) else 0,
        "timing_note": _timing_note(final),
        "failed": bool(job and job[2] == "failed"),
        "error": public_text(job[4]) if job else "",
    }


def _timing_note(final) -> str:
    """Why a final result's timing was flagged by the cross-check (its numbers), or why an interval above 1.0 was
    not called faster; or nothing."""
    if not final:
        return ""
    if schema.FLAG_TIMING_CROSSCHECK in (final[5] or []) and isinstance(final[7], dict):
        return report.crosscheck_line(final[7], final[8] if isinstance(final[8], dict) else None)
    return report.withheld_line(
        {
            "reference_blocks_spun_short": final[9] if isinstance(final[9], list) else None,
            "reference_spun_short_pairs": final[10] if isinstance(final[10], list) else None,
        }
    )


def submission_status(submission: Submission) -> dict:
    """Live status: job counts (``building``: those of the queued and running ones in the build stage) and each
    problem's current status (three queries)."""
    counts = dict(EvaluationJob.objects.filter(submission=submission).values_list("status").annotate(n=Count("id")))
    scores = dict(
        ProblemScore.objects.filter(submission=submission)
        .exclude(status=ProblemScore.NO_CANDIDATE)
        .values_list("problem_id", "status")
    )
    entry = (
        LeaderboardEntry.objects.filter(submission=submission)
        .values("correct", "faster", "judged", "pending", "geomean_speedup", "geomean_peak_fraction", "peak_problems")
        .first()
        or {}
    )
    jobs = {s: counts.get(s, 0) for s in ("queued", "running", "done", "failed")}
    # Of the queued and running jobs, those still in the build stage (compiling on CPU cores, no GPU held yet): a job
    # that builds is claimed ("running") by a build worker, and an operator must not read it as holding a GPU.
    jobs["building"] = EvaluationJob.objects.filter(
        submission=submission,
        status__in=(EvaluationJob.QUEUED, EvaluationJob.RUNNING),
        build_status__in=(EvaluationJob.BUILD_QUEUED, EvaluationJob.BUILDING),
    ).count()
    return {
        "submission": submission.pk,
        "jobs": jobs,
        "finished": jobs["queued"] + jobs["running"] == 0,
        "problems": {str(k): v for k, v in scores.items()},
        "entry": entry,
        "files": _job_files(submission),
    }


def _job_files(submission: Submission) -> list[dict]:
    """Each uploaded file's job and, once its current run has a final result, the verdict (two queries): what
    ``pkb submit --wait`` prints as each one lands."""
    jobs = list(
        EvaluationJob.objects.filter(submission=submission)
        .values("id", "status", "run", "candidate__filename", "candidate__problem_id", "candidate__attempt")
        .order_by("candidate__problem_id", "candidate__attempt", "id")
    )
    finals = {
        (r["job_id"], r["run"]): r
        for r in Result.objects.filter(job__submission=submission)
        .exclude(verdict=INFRA_ERROR)
        .values("job_id", "run", "verdict", "speedup", "faster", "message")
    }
    out = []
    for job in jobs:
        final = finals.get((job["id"], job["run"])) or {}
        out.append(
            {
                "job": job["id"],
                "file": job["candidate__filename"],
                "problem": job["candidate__problem_id"],
                "attempt": job["candidate__attempt"],
                "status": job["status"],
                "verdict": final.get("verdict"),
                "speedup": final.get("speedup"),
                "faster": bool(final.get("faster")),
                "message": public_text(final.get("message") or "")[:300],
            }
        )
    return out
