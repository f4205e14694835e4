"""Pages of the feedback loop (the feedback app's reads and writes): a session, a run, a profile run's trace, and the
owner's actions on a submission. Routed in leaderboard/urls.py."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from leaderboard.accounts import services as accounts_services
from leaderboard.feedback import report, selectors, services
from leaderboard.pages.forms import IdForm
from leaderboard.submissions import selectors as submissions_selectors
from leaderboard.submissions.models import Candidate


def session_detail(request, pk):
    session = selectors.session_get(pk, request.user)
    return render(
        request,
        "feedback/session.html",
        {
            "session": session,
            "data": selectors.session_dict(session),
            "is_owner": session.submitter.user_id == request.user.pk,
        },
    )


@login_required
def run_detail(request, pk):
    run = selectors.run_get(pk, request.user)
    return render(
        request,
        "feedback/run.html",
        {
            "run": run,
            "text": report.text(run.feedback) if run.feedback and "verdict" in run.feedback else "",
            "summary": run.summary,
        },
    )


@login_required
def run_trace(request, pk):
    run = selectors.run_get(pk, request.user)
    data = run.trace_gz
    if not data:
        raise Http404("this run has no trace")
    response = HttpResponse(bytes(data), content_type="application/gzip")
    response["Content-Disposition"] = f'attachment; filename="pkb-profile-{run.pk}-{run.problem.stem}.trace.json.gz"'
    return response


@require_POST
@login_required
def submission_profile(request, pk):
    submission = submissions_selectors.submission_get(pk, request.user)
    candidate = (
        Candidate.objects.select_related("problem", "submission")
        .filter(pk=IdForm.value(request.POST.get("candidate")) or -1, submission=submission)
        .first()
    )
    if candidate is None:
        raise Http404("no such file in this submission")
    try:
        run = services.profile_run_create(candidate, request.user)
    except accounts_services.NotAllowed as exc:
        raise PermissionDenied(str(exc)) from exc
    except (services.Refused, accounts_services.QuotaExceeded) as exc:
        messages.error(request, f"Profile run refused: {exc.message}")
        return redirect(submission.get_absolute_url() + "#profile-runs")
    messages.success(request, f"Profile run #{run.pk} queued for {candidate.filename} on {run.queue_name}.")
    return redirect(submission.get_absolute_url() + "#profile-runs")


@require_POST
@login_required
def submission_link(request, pk):
    submission = submissions_selectors.submission_get(pk, request.user)
    value = str(request.POST.get("session", "")).strip()
    session_id, session = IdForm.value(value), None
    if session_id is not None:
        try:
            session = selectors.session_get(session_id, request.user)
        except Http404:
            session = None
    if session is None:
        messages.error(request, f"No feedback session {value[:40]!r} of yours.")
        return redirect(submission)
    try:
        services.session_link(session, submission, request.user)
    except accounts_services.NotAllowed as exc:
        raise PermissionDenied(str(exc)) from exc
    except services.Refused as exc:
        messages.error(request, exc.message)
        return redirect(submission)
    messages.success(request, f"Feedback session {session.pk} linked; it is closed now.")
    return redirect(submission)
