"""Reads of one submission and its parts, with the visibility rules in one place."""
from __future__ import annotations

from collections import defaultdict

from django.db.models import Count
from django.http import Http404

from evaluator import schema
from evaluator.schema import INFRA_ERROR
from leaderboard.catalogue.models import Problem
from leaderboard.feedback import report
from leaderboard.jobs.models import EvaluationJob, Result
from leaderboard.scoring.models import LeaderboardEntry, ProblemScore
from leaderboard.submissions.models import Candidate, Submission, Transcript


def submission_get(pk: int, user) -> Submission:
    submission = (Submission.objects.select_related("submitter__user", "profile", "entry", "feedback_for")
                  .filter(pk=pk).first())
    if submission is None or not submission.visible_to(user):
        raise Http404("no such submission")
    return submission


def submission_grid(submission: Submission) -> list[dict]:
    """Per problem (all 87): the score and every attempt with its job and current result (five queries).

    Rows are plain dicts and tuples (no model instances for the 87 x k attempts): the page must stay fast.
    """
    problems = list(Problem.objects.order_by("id").values_list("id", "stem"))
    scores = {s.problem_id: s for s in ProblemScore.objects.filter(submission=submission).only(
        "problem_id", "status", "attempt", "correct", "faster", "flagged", "speedup", "speedup_lo", "speedup_hi",
        "peak_fraction", "peak_fraction_lo", "peak_fraction_hi", "peak_note", "audit")}
    jobs = {row[1]: row for row in EvaluationJob.objects.filter(submission=submission).values_list(
        "id", "candidate_id", "status", "run", "last_error")}
    results: dict = {}
    for row in Result.objects.filter(job__submission=submission).order_by("id").values_list(
            "id", "job_id", "run", "verdict", "message", "flags", "document__timing__pairs__set_aside",
            "document__timing__crosscheck", "document__timing__pairs__probe",
            "document__timing__reference_blocks_spun_short", "document__timing__reference_spun_short_pairs"):
        results.setdefault((row[1], row[2]), []).append(row)
    attempts = defaultdict(list)
    for cid, pid, attempt in Candidate.objects.filter(submission=submission).order_by("attempt").values_list(
            "id", "problem_id", "attempt"):
        attempts[pid].append(_attempt_cell(cid, attempt, jobs.get(cid), results))
    return [{"problem": {"id": pid, "stem": stem}, "score": scores.get(pid), "attempts": attempts.get(pid, [])}
            for pid, stem in problems]


def _attempt_cell(candidate_id: int, attempt: int, job, results) -> dict:
    """One attempt: its job's status and the current run's final result (infra errors are retries, not verdicts)."""
    history = results.get((job[0], job[3]), []) if job else []
    final = next((r for r in reversed(history) if r[3] != schema.INFRA_ERROR), None)
    return {"candidate_id": candidate_id, "attempt": attempt, "judged": job is not None,
            "status": final[3] if final else (job[2] if job else "not_judged"),
            "result_id": final[0] if final else None, "message": final[4] if final else "",
            "flags": final[5] if final else [], "retries": sum(1 for r in history if r[3] == schema.INFRA_ERROR),
            # Timing pairs whose cross-check was suspect, left out of the speedup (evaluator/timing/pairs.py, triage).
            "set_aside": len(final[6]) if final and isinstance(final[6], list) else 0,
            "timing_note": _timing_note(final),
            "failed": bool(job and job[2] == "failed"), "error": job[4] if job else ""}


def _timing_note(final) -> str:
    """Why a final result's timing was flagged by the cross-check (its numbers), or why an interval above 1.0 was
    not called faster; or nothing."""
    if not final:
        return ""
    if schema.FLAG_TIMING_CROSSCHECK in (final[5] or []) and isinstance(final[7], dict):
        return report.crosscheck_line(final[7], final[8] if isinstance(final[8], dict) else None)
    return report.withheld_line({"reference_blocks_spun_short": final[9] if isinstance(final[9], list) else None,
                                 "reference_spun_short_pairs": final[10] if isinstance(final[10], list) else None})


def submission_environment(submission: Submission) -> dict:
    """Where the latest result ran (GPU, driver, torch, NCCL...): public, unlike logs."""
    # No ORDER BY: sorting on the result id would walk the whole results index; any final result tells the host.
    value = next(iter(Result.objects.filter(job__submission=submission).exclude(verdict="infra_error").order_by()
                      .values_list("document__environment", flat=True)[:1]), None)
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if k != "sandbox"}  # the sandbox has a line of its own


def submission_sandbox(submission: Submission) -> dict:
    """Whether the submission's candidates ran inside the whole sandbox, as one line for people (one query): ``ok``
    True when every judged result did, False when any did not (its own line, saying what was missing), None when no
    result records it (judged before the judge recorded it, or not judged yet)."""
    rows = list(Result.objects.filter(job__submission=submission).exclude(verdict="infra_error").order_by()
                .values_list("document__environment__sandbox__complete", "document__environment__sandbox__summary")
                .distinct()[:20])
    recorded = [(complete, line) for complete, line in rows if isinstance(complete, bool)]
    if not recorded:
        return {"ok": None, "line": "not recorded for these results"}
    unsandboxed = [line for complete, line in recorded if not complete]
    if unsandboxed:
        return {"ok": False, "line": str(unsandboxed[0] or "UNSANDBOXED")}
    return {"ok": True, "line": "every candidate ran sandboxed: its own uid, no network, a private filesystem view, "
                                "no process outliving the job"}


def submission_status(submission: Submission) -> dict:
    """Live status: job counts and each problem's current status (two queries)."""
    counts = dict(EvaluationJob.objects.filter(submission=submission).values_list("status").annotate(n=Count("id")))
    scores = dict(ProblemScore.objects.filter(submission=submission).exclude(status=ProblemScore.NO_CANDIDATE)
                  .values_list("problem_id", "status"))
    entry = LeaderboardEntry.objects.filter(submission=submission).values(
        "correct", "faster", "judged", "pending", "geomean_speedup", "geomean_peak_fraction",
        "peak_problems").first() or {}
    jobs = {s: counts.get(s, 0) for s in ("queued", "running", "done", "failed")}
    return {"submission": submission.pk, "jobs": jobs, "finished": jobs["queued"] + jobs["running"] == 0,
            "problems": {str(k): v for k, v in scores.items()}, "entry": entry, "files": _job_files(submission)}


def _job_files(submission: Submission) -> list[dict]:
    """Each uploaded file's job and, once its current run has a final result, the verdict (two queries): what
    ``pkb submit --wait`` prints as each one lands."""
    jobs = list(EvaluationJob.objects.filter(submission=submission)
                .values("id", "status", "run", "candidate__filename", "candidate__problem_id", "candidate__attempt")
                .order_by("candidate__problem_id", "candidate__attempt", "id"))
    finals = {(r["job_id"], r["run"]): r for r in Result.objects.filter(job__submission=submission)
              .exclude(verdict=INFRA_ERROR).values("job_id", "run", "verdict", "speedup", "faster", "message")}
    out = []
    for job in jobs:
        final = finals.get((job["id"], job["run"])) or {}
        out.append({"job": job["id"], "file": job["candidate__filename"], "problem": job["candidate__problem_id"],
                    "attempt": job["candidate__attempt"], "status": job["status"], "verdict": final.get("verdict"),
                    "speedup": final.get("speedup"), "faster": bool(final.get("faster")),
                    "message": (final.get("message") or "")[:300]})
    return out


def result_for_viewer(result_id: int, user) -> Result:
    result = Result.objects.select_related("job__submission__submitter__user", "job__candidate__problem").filter(
        pk=result_id).first()
    if result is None or not result.job.submission.visible_to(user):
        raise Http404("no such result")
    return result


def candidate_for_viewer(candidate_id: int, user) -> Candidate:
    candidate = Candidate.objects.select_related("submission__submitter__user", "problem").filter(
        pk=candidate_id).first()
    if candidate is None or not candidate.submission.code_visible_to(user):
        raise Http404("no such candidate")
    return candidate


def submissions_of(user) -> list[Submission]:
    # submitter__user: the API's rows name the submitter (one query for all rows, not two per row).
    return list(Submission.objects.filter(submitter__user=user).select_related("submitter__user", "profile", "entry")
                .order_by("-created_at")[:200])


def transcript_for_viewer(transcript_id: int, user) -> Transcript:
    """A transcript, for whoever may see the submission's code (the owner and staff until it is published)."""
    transcript = Transcript.objects.select_related("submission__submitter__user", "submission__profile",
                                                   "problem").filter(pk=transcript_id).first()
    if transcript is None or not transcript.submission.code_visible_to(user):
        raise Http404("no such transcript")
    return transcript


def transcripts_of(submission: Submission, user) -> list[dict]:
    """The submission's transcripts (id, file, problem, attempt, steps), or none where the viewer may not see them."""
    if not submission.code_visible_to(user):
        return []
    return list(Transcript.objects.filter(submission=submission).values(
        "id", "filename", "problem_id", "problem__stem", "attempt", "steps", "size"))


def transcript_steps(transcript: Transcript, user) -> list[dict]:
    """The transcript's steps, each with the metered feedback runs it refers to that belong to this submission's
    linked sessions (run pages stay their owner's; the verdict and wall time are shown in place)."""
    from leaderboard.feedback.models import FeedbackRun
    from leaderboard.submissions import transcripts

    steps = transcripts.steps(transcript.content)
    wanted = {run for s in steps for run in s["runs"]}
    runs = {}
    if wanted:
        runs = {r["id"]: r for r in FeedbackRun.objects.filter(
            pk__in=wanted, session__submission=transcript.submission).values(
            "id", "status", "verdict", "wall_ms", "problem__stem", "submitter__user_id")}
    owner = bool(user and user.is_authenticated and (user.is_staff or transcript.submission.is_owner(user)))
    for s in steps:
        s["metered"] = [dict(runs[r], link=owner) for r in s["runs"] if r in runs]
    return steps
