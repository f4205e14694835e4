"""Server-rendered pages: short functions over selectors (reads) and services (writes). Here: the leaderboard, a
submission's page and its owner's actions, submit, the account, the error handlers, health and the guides. The other
families: problem_views.py (problems), result_views.py (code, results, logs), records_views.py (transcripts, audits),
accounts_views.py, metadata_views.py, feedback.py (the feedback loop)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from evaluator.contract.schema import ONE_PAIR_FLOOR
from leaderboard.accounts import selectors as accounts_selectors
from leaderboard.accounts import services as accounts_services
from leaderboard.accounts import throttle
from leaderboard.catalogue import selectors as catalogue_selectors
from leaderboard.pages.forms import SignupForm, SubmitForm, TokenForm
from leaderboard.scoring import export
from leaderboard.scoring import selectors as scoring_selectors
from leaderboard.scoring import submission_selectors as scoring_submissions
from leaderboard.submissions import selectors as submissions_selectors
from leaderboard.submissions import services as submissions_services
from leaderboard.submissions import upload_handlers, uploads
from leaderboard.validators import BadQuery


def site_context(request) -> dict:
    return {"site_name": "pkb-arena", "open_signup": settings.PKB_OPEN_SIGNUP}


# --- leaderboard ------------------------------------------------------------------------------------------------------


def home(request):
    return leaderboard(request, None)


def leaderboard(request, slug):
    profile = catalogue_selectors.profile_get(slug)
    filters = scoring_selectors.Filters.from_query(request.GET)
    fmt = export.wanted(request)
    if fmt:
        columns, rows = export.leaderboard_table(scoring_selectors.leaderboard_export(profile, filters))
        return export.table_response(fmt, f"leaderboard-{profile.slug}", columns, rows)
    sections = scoring_selectors.leaderboard_sections(profile, filters)
    return render(
        request,
        "leaderboard/leaderboard.html",
        {
            "profile": profile,
            "profiles": catalogue_selectors.profiles(),
            "sections": sections,
            "filters": filters,
            "choices": scoring_selectors.filter_choices(profile),
            "query": request.GET.urlencode(),
        },
    )


# --- submissions ------------------------------------------------------------------------------------------------------


def submission_detail(request, pk):
    submission = submissions_selectors.submission_get(pk, request.user)
    grid = scoring_submissions.submission_grid(submission)
    fmt = export.wanted(request)
    if fmt:
        columns, rows = export.submission_table(grid)
        return export.table_response(fmt, f"submission-{submission.pk}", columns, rows)
    status = scoring_submissions.submission_status(submission)
    transcripts = submissions_selectors.transcripts_of(submission, request.user)
    by_problem: dict = {}
    for t in transcripts:
        by_problem.setdefault(t["problem_id"], []).append(t)
    audits = scoring_selectors.audits_visible(request.user, submission.pk)
    return render(
        request,
        "leaderboard/submission.html",
        {
            "submission": submission,
            "grid": grid,
            "status": status,
            "entry": getattr(submission, "entry", None),
            "transcripts": transcripts,
            "transcripts_by_problem": by_problem,
            "audits": audits,
            "audit_notes": {a.problem_id: a.note for a in audits},
            "judged_any": status["jobs"]["done"] > 0,
            "is_owner": submission.is_owner(request.user),
            "code_visible": submission.code_visible_to(request.user),
            "environment": submissions_selectors.submission_environment(submission),
            "sandbox": submissions_selectors.submission_sandbox(submission),
            "one_pair_floor": f"{ONE_PAIR_FLOOR.get(submission.profile.device, 0.0):.1%}",
        },
    )


def submission_status(request, pk):
    submission = submissions_selectors.submission_get(pk, request.user)
    return JsonResponse(scoring_submissions.submission_status(submission))


def _confirmed(request, submission, what: str) -> bool:
    """Publishing, withdrawing and deleting ask for a ticked box in the same form (no script: the CSP)."""
    if request.POST.get("confirm") == "yes":
        return True
    messages.error(request, f"Not {what}: tick the box that confirms it.")
    return False


# Confirmed visibility changes of an owner's submission: the service that makes it, and what the page then says.
_VISIBILITY = {
    "published": (
        lambda s, user: submissions_services.submission_publish(s, user),
        "Published: the submission is listed and its code is public.",
    ),
    "withdrawn": (
        lambda s, user: submissions_services.submission_withdraw(s, user),
        "Withdrawn: the submission is off every leaderboard and export; its results stay visible to you.",
    ),
}


def _change_visibility(request, pk, what: str):
    submission = submissions_selectors.submission_get(pk, request.user)
    if not _confirmed(request, submission, what):
        return redirect(submission)
    change, done = _VISIBILITY[what]
    try:
        change(submission, request.user)
    except accounts_services.NotAllowed as exc:
        raise PermissionDenied(str(exc)) from exc
    messages.success(request, done)
    return redirect(submission)


@require_POST
@login_required
def submission_publish(request, pk):
    return _change_visibility(request, pk, "published")


@require_POST
@login_required
def submission_withdraw(request, pk):
    return _change_visibility(request, pk, "withdrawn")


@require_POST
@login_required
def submission_delete(request, pk):
    submission = submissions_selectors.submission_get(pk, request.user)
    if not _confirmed(request, submission, "deleted"):
        return redirect(submission)
    try:
        submissions_services.submission_delete(submission, request.user)
    except accounts_services.NotAllowed as exc:
        messages.error(request, f"Not deleted: {exc}.")
        return redirect(submission)
    messages.success(request, f"Submission #{pk} deleted.")
    return redirect("account")


@require_POST
@login_required
def submission_rerun(request, pk):
    submission = submissions_selectors.submission_get(pk, request.user)
    try:
        count = submissions_services.submission_rerun(
            submission, request.user, only_failed=request.POST.get("only") == "failed"
        )
    except accounts_services.NotAllowed as exc:
        raise PermissionDenied(str(exc)) from exc
    except accounts_services.QuotaExceeded as exc:
        messages.error(request, f"Quota: {exc.message}")
        return redirect(submission)
    messages.success(request, f"{count} evaluation(s) queued again.")
    return redirect(submission)


@login_required
def submit(request):
    submitter = accounts_services.submitter_for(request.user)
    form = SubmitForm(request.POST or None)
    errors = []
    if request.method == "POST" and form.is_valid():
        try:
            submission = submissions_services.submission_create(
                submitter, form.metadata(), upload_handlers.request_files(request.FILES, request.POST)
            )
        except uploads.UploadRejected as exc:
            errors = exc.errors
        except accounts_services.QuotaExceeded as exc:
            errors = [uploads.UploadError("(upload)", "quota", exc.message)]
        else:
            if form.cleaned_data.get("publish"):
                submissions_services.submission_publish(submission, request.user)
            messages.success(
                request, f"Submission #{submission.pk} accepted: {submission.jobs.count()} evaluation(s) queued."
            )
            return redirect(submission)
    return render(
        request,
        "leaderboard/submit.html",
        {
            "form": form,
            "errors": errors,
            "quota": accounts_selectors.quota_status(submitter),
            "max_upload": settings.PKB_MAX_UPLOAD_BYTES,
            "max_file": settings.PKB_MAX_FILE_BYTES,
        },
        status=400 if errors else 200,
    )


# --- account ----------------------------------------------------------------------------------------------------------


@login_required
def account(request):
    submitter = accounts_services.submitter_for(request.user)
    form = TokenForm(request.POST or None)
    new_token = None
    if request.method == "POST" and form.is_valid():
        token, new_token = accounts_services.token_create(
            submitter, form.cleaned_data["name"], form.cleaned_data["scopes"], form.cleaned_data["days"]
        )
        form = TokenForm()
    return render(
        request,
        "leaderboard/account.html",
        {
            "submitter": submitter,
            "form": form,
            "new_token": new_token,
            "tokens": accounts_selectors.tokens_of(request.user),
            "submissions": submissions_selectors.submissions_of(request.user),
            "quota": accounts_selectors.quota_status(submitter),
        },
    )


def signup(request):
    if not settings.PKB_OPEN_SIGNUP:
        raise Http404("sign-up is closed")
    if request.method == "POST":
        # Every post counts, valid or not: each costs a password hash, and a flood of accounts is the point of it.
        ip = throttle.client_ip(request)
        limit = throttle.signup_limit()
        until = throttle.retry_at(limit, ip)
        if until is not None:
            return throttle.refusal(request, until, "sign-ups")
        throttle.record(limit, ip)
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        accounts_services.submitter_for(user)
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("account")
    return render(request, "registration/signup.html", {"form": form})


# --- errors -----------------------------------------------------------------------------------------------------------


def bad_request(request, exception=None):
    """handler400: a query parameter that failed its form shows the form's messages; a body over the limits says
    so (413); anything else Django refused (bad multipart, too many fields) a generic line."""
    from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent

    status, errors, message = 400, {}, "The request could not be read."
    if isinstance(exception, BadQuery):
        errors, message = exception.errors, "A query parameter is not valid."
    elif isinstance(exception, RequestDataTooBig):
        status, message = (
            413,
            f"The request is too large: uploads are limited to {settings.PKB_MAX_UPLOAD_BYTES:,} bytes.",
        )
    elif isinstance(exception, (TooManyFieldsSent, TooManyFilesSent)):
        message = "The request has too many fields or files."
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message, "errors": errors}, status=status)
    return render(request, "leaderboard/bad_request.html", {"message": message, "errors": errors}, status=status)


def not_found(request, exception=None):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return render(request, "404.html", {"path": request.path}, status=404)


def server_error(request):
    """handler500: no database, no context processors (whatever failed may fail again)."""
    from django.template import loader

    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Server error: the operator's log has the details."}, status=500)
    try:
        body = loader.get_template("500.html").render()
    except Exception:  # noqa: BLE001 - the error page itself must not fail, whatever failed before it
        body = "Server error: the operator's log has the details."
    return HttpResponse(body, status=500)


def favicon(request):
    """Browsers that ask for /favicon.ico get the page's icon (its hashed name is known only once collected)."""
    from django.templatetags.static import static

    return redirect(static("favicon.svg"))


# --- health -----------------------------------------------------------------------------------------------------------


def healthz(request):
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return HttpResponse("ok", content_type="text/plain")


# --- the guides -------------------------------------------------------------------------------------------------------


def exploits_page(request):
    from leaderboard.pages import exploits

    return render(request, "leaderboard/exploits.html", {"data": exploits.load()})


def getting_started(request):
    profile = catalogue_selectors.profile_get(None)
    return render(
        request,
        "leaderboard/getting_started.html",
        {
            "profile": profile,
            "profiles": catalogue_selectors.profiles(),
            "max_upload": settings.PKB_MAX_UPLOAD_BYTES,
            "max_file": settings.PKB_MAX_FILE_BYTES,
            "max_attempts": settings.PKB_MAX_ATTEMPTS,
            "site_url": request.build_absolute_uri("/").rstrip("/"),
        },
    )


def leaderboard_index(request):
    """/leaderboard/ (issue 35: it was a 404): the default profile's board."""
    return redirect("leaderboard", catalogue_selectors.profile_get(None).slug)
