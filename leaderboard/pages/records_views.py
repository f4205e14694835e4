"""The pages of what is recorded beside results: agents' transcripts (owner-only until published, like code) and
staff audits of submissions."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_POST

from leaderboard.feedback import selectors as feedback_selectors
from leaderboard.scoring import export
from leaderboard.scoring import selectors as scoring_selectors
from leaderboard.submissions import selectors as submissions_selectors


def transcript_page(request, pk):
    """An agent transcript step by step: each message, tool call and result collapsible, the metered feedback runs a
    step refers to shown in place. Owner-only until the submission is published, like code."""
    transcript = submissions_selectors.transcript_for_viewer(pk, request.user)
    steps = feedback_selectors.transcript_steps(transcript, request.user)
    return render(
        request,
        "leaderboard/transcript.html",
        {
            "transcript": transcript,
            "submission": transcript.submission,
            "steps": steps,
            "calls": sum(len(s["calls"]) for s in steps),
            "metered": sum(len(s["metered"]) for s in steps),
        },
    )


def transcript_raw(request, pk):
    transcript = submissions_selectors.transcript_for_viewer(pk, request.user)
    response = HttpResponse(transcript.content, content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(True, transcript.filename.split("/")[-1])
    return response


def audits_page(request):
    """Every staff audit of a listed submission (staff see all), newest first; ?submission= narrows to one."""
    submission_id = scoring_selectors.query_clean(request.GET).get("submission")
    audits = scoring_selectors.audits_visible(request.user, submission_id)
    fmt = export.wanted(request)
    if fmt:
        columns, rows = export.audits_table(audits)
        return export.table_response(fmt, "audits", columns, rows)
    return render(request, "leaderboard/audits.html", {"audits": audits, "submission_id": submission_id})


@require_POST
@login_required
def audit_record(request, pk):
    """Staff record an audit of a submission (or of one of its problems) from its page."""
    if not request.user.is_staff:
        raise PermissionDenied("only staff record audits")
    from leaderboard.pages.forms import AuditForm
    from leaderboard.scoring import services as scoring_services

    submission = submissions_selectors.submission_get(pk, request.user)
    form = AuditForm(request.POST, attempted=scoring_services.attempted_problems(submission))
    if not form.is_valid():
        messages.error(
            request,
            "Audit not recorded: " + "; ".join(f"{field}: {' '.join(errors)}" for field, errors in form.errors.items()),
        )
        return redirect(submission)
    problem = form.cleaned_data["problem"]
    scoring_services.audit_record(
        submission, problem, form.cleaned_data["verdict"], form.cleaned_data["note"], request.user
    )
    messages.success(
        request,
        f"Audit recorded: {form.cleaned_data['verdict'].replace('_', ' ')}"
        f"{f' on problem {problem}' if problem else ' on the whole submission'}.",
    )
    return redirect(submission)
