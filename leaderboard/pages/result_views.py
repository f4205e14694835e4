"""The pages of a submission's files and results: a candidate's code (raw, and inside the site's page), a result's
judge document (staff whole, anyone else its public reading) and its ranks' log tails, as a page and as text; code and
logs are the owner's until the submission is published."""

from __future__ import annotations

from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.http import content_disposition_header

from leaderboard.jobs import logs
from leaderboard.submissions import selectors as submissions_selectors


def candidate_code(request, pk):
    candidate = submissions_selectors.candidate_for_viewer(pk, request.user)
    response = HttpResponse(candidate.code, content_type="text/plain; charset=utf-8")
    # Django quotes or percent-encodes the name (a stored name may predate the file-name checks).
    response["Content-Disposition"] = content_disposition_header(False, candidate.filename.split("/")[-1])
    return response


def result_detail(request, pk):
    """The judge's document; logs only for whoever may see the code (the owner until published)."""
    from leaderboard.jobs.public import public_document

    result = submissions_selectors.result_for_viewer(pk, request.user)
    # Staff read the document whole; anyone else its public reading (no server paths, no sandbox internals).
    document = (
        dict(result.document)
        if request.user.is_staff
        else public_document(result.document, result.job.candidate.filename)
    )
    if not result.job.submission.code_visible_to(request.user):
        document["logs"] = "visible to the owner until the submission is published"
    else:
        document["logs"] = logs.clean_logs(document.get("logs"))  # no server paths, no c10d start-up noise
    return JsonResponse(document, json_dumps_params={"indent": 1})


def candidate_page(request, pk):
    """The code of one candidate inside the site's page (navigation, the submission it belongs to, a raw link)."""
    candidate = submissions_selectors.candidate_for_viewer(pk, request.user)
    return render(request, "leaderboard/code.html", {"candidate": candidate, "submission": candidate.submission})


def _log_sections(result) -> list[tuple[str, str]]:
    sections = []
    for log in result.logs:
        where = f"{log.get('role', '?')} rank {log.get('rank')}"
        for stream in ("stdout", "stderr"):
            text = logs.clean(log.get(stream) or "").rstrip()  # no server paths, no c10d start-up noise
            if text:
                sections.append((f"{where} {stream}", text))
    return sections


def _logs_result(request, pk):
    result = submissions_selectors.result_for_viewer(pk, request.user)
    if not result.job.submission.code_visible_to(request.user):
        raise Http404("logs are visible to the owner until the submission is published")
    return result


def result_logs_page(request, pk):
    """A result's verdict and its ranks' log tails inside the site's page: the owner's until published."""
    result = _logs_result(request, pk)
    return render(
        request,
        "leaderboard/logs.html",
        {
            "result": result,
            "submission": result.job.submission,
            "candidate": result.job.candidate,
            "message": logs.clean(result.message),
            "sections": _log_sections(result),
        },
    )


def result_logs(request, pk):
    """The bounded stdout/stderr tails of every rank, as text: the owner's until the submission is published."""
    result = _logs_result(request, pk)
    parts = [f"result {result.pk}: {result.verdict} - {logs.clean(result.message)}"]
    parts += [f"--- {where} ---\n{text}" for where, text in _log_sections(result)]
    response = HttpResponse("\n\n".join(parts) + "\n", content_type="text/plain; charset=utf-8")
    response["X-Content-Type-Options"] = "nosniff"
    return response
