"""Reads of one submission and its parts, with the visibility rules in one place."""

from __future__ import annotations

from django.http import Http404

from leaderboard.jobs.models import Result
from leaderboard.submissions.models import Candidate, Submission, Transcript


def submission_get(pk: int, user) -> Submission:
    submission = (
        Submission.objects.select_related("submitter__user", "profile", "entry", "feedback_for").filter(pk=pk).first()
    )
    if submission is None or not submission.visible_to(user):
        raise Http404("no such submission")
    return submission


def submission_environment(submission: Submission) -> dict:
    """Where the latest result ran (GPU, driver, torch, NCCL...): public, unlike logs."""
    # No ORDER BY: sorting on the result id would walk the whole results index; any final result tells the host.
    value = next(
        iter(
            Result.objects.filter(job__submission=submission)
            .exclude(verdict="infra_error")
            .order_by()
            .values_list("document__environment", flat=True)[:1]
        ),
        None,
    )
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if k != "sandbox"}  # the sandbox has a line of its own


def submission_sandbox(submission: Submission) -> dict:
    """Whether the submission's candidates ran inside the whole sandbox, as one line for people (one query): ``ok``
    True when every judged result did, False when any did not (its own line, saying what was missing), None when no
    result records it (judged before the judge recorded it, or not judged yet)."""
    rows = list(
        Result.objects.filter(job__submission=submission)
        .exclude(verdict="infra_error")
        .order_by()
        .values_list("document__environment__sandbox__complete", "document__environment__sandbox__summary")
        .distinct()[:20]
    )
    recorded = [(complete, line) for complete, line in rows if isinstance(complete, bool)]
    if not recorded:
        return {"ok": None, "line": "not recorded for these results"}
    unsandboxed = [line for complete, line in recorded if not complete]
    if unsandboxed:
        return {"ok": False, "line": str(unsandboxed[0] or "UNSANDBOXED")}
    return {
        "ok": True,
        "line": "every candidate ran sandboxed: its own uid, no network, a private filesystem view, "
        "no process outliving the job",
    }


def result_for_viewer(result_id: int, user) -> Result:
    result = (
        Result.objects.select_related("job__submission__submitter__user", "job__candidate__problem")
        .filter(pk=result_id)
        .first()
    )
    if result is None or not result.job.submission.visible_to(user):
        raise Http404("no such result")
    return result


def candidate_for_viewer(candidate_id: int, user) -> Candidate:
    candidate = (
        Candidate.objects.select_related("submission__submitter__user", "problem").filter(pk=candidate_id).first()
    )
    if candidate is None or not candidate.submission.code_visible_to(user):
        raise Http404("no such candidate")
    return candidate


def submissions_of(user) -> list[Submission]:
    # submitter__user: the API's rows name the submitter (one query for all rows, not two per row).
    return list(
        Submission.objects.filter(submitter__user=user)
        .select_related("submitter__user", "profile", "entry")
        .order_by("-created_at")[:200]
    )


def transcript_for_viewer(transcript_id: int, user) -> Transcript:
    """A transcript, for whoever may see the submission's code (the owner and staff until it is published)."""
    transcript = (
        Transcript.objects.select_related("submission__submitter__user", "submission__profile", "problem")
        .filter(pk=transcript_id)
        .first()
    )
    if transcript is None or not transcript.submission.code_visible_to(user):
        raise Http404("no such transcript")
    return transcript


def transcripts_of(submission: Submission, user) -> list[dict]:
    """The submission's transcripts (id, file, problem, attempt, steps), or none where the viewer may not see them."""
    if not submission.code_visible_to(user):
        return []
    return list(
        Transcript.objects.filter(submission=submission).values(
            "id", "filename", "problem_id", "problem__stem", "attempt", "steps", "size"
        )
    )
