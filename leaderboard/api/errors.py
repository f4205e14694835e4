from django.core.exceptions import BadRequest, RequestDataTooBig, SuspiciousOperation
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_handler

from leaderboard.accounts.services import NotAllowed, QuotaExceeded
from leaderboard.feedback.services import Refused
from leaderboard.submissions.uploads import UploadRejected
from leaderboard.validators import BadQuery


def exception_handler(exc, context):
    """DRF's handler (Django's Http404/PermissionDenied become JSON too: DRF maps them), plus what Django itself
    refuses while the view reads the request - a bad query parameter, a body over the limits, too many files or
    fields - as the API's JSON error instead of Django's HTML page. The services' refusals have one answer each,
    whichever endpoint met them: an action that is not yours to take is 403, a spent quota 429 with its next slot."""
    if isinstance(exc, Refused):  # a feedback request that cannot become a run: nothing stored or charged
        return Response(
            {"detail": exc.message, "errors": [{"field": exc.field, "message": exc.message}]},
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, NotAllowed):
        return Response({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, QuotaExceeded):
        return Response(
            {
                "detail": exc.message,
                "errors": [{"field": "quota", "rule": "quota", "message": exc.message}],
                "next_free_at": exc.next_free_at,
            },
            status=status.HTTP_429_TOO_MANY_REQUESTS,
        )
    if isinstance(exc, BadQuery):
        return Response(
            {"detail": "a query parameter is not valid", "errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST
        )
    if isinstance(exc, UploadRejected):
        return Response(
            {"detail": "upload refused; nothing was stored", "errors": [e.as_dict() for e in exc.errors]},
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, RequestDataTooBig):
        return Response({"detail": f"request too large: {exc}"}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, (BadRequest, SuspiciousOperation)):
        return Response({"detail": f"bad request: {exc}"}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, ValidationError):  # a serializer's field errors: the same shape as every other refusal
        return Response(_field_errors(exc.detail), status=status.HTTP_400_BAD_REQUEST)
    return drf_handler(exc, context)


def _field_errors(detail) -> dict:
    """DRF's ``{field: [message, ...]}`` as the API's refusal: ``detail`` and one ``{field, message}`` per message."""
    errors = []
    for field, messages in detail.items() if isinstance(detail, dict) else [("non_field_errors", detail)]:
        for message in messages if isinstance(messages, list) else [messages]:
            errors.append({"field": str(field), "message": str(message)})
    summary = "; ".join(f"{e['field']}: {e['message']}" for e in errors[:3])
    return {"detail": f"not valid: {summary}" if summary else "not valid", "errors": errors}
