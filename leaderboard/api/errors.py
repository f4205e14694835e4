from django.core.exceptions import BadRequest, RequestDataTooBig, SuspiciousOperation
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_handler

from leaderboard.selectors import BadQuery
from leaderboard.uploads import UploadRejected


def exception_handler(exc, context):
    """DRF's handler (Django's Http404/PermissionDenied become JSON too: DRF maps them), plus what Django itself
    refuses while the view reads the request - a bad query parameter, a body over the limits, too many files or
    fields - as the API's JSON error instead of Django's HTML page."""
    if isinstance(exc, BadQuery):
        return Response({"detail": "a query parameter is not valid", "errors": exc.errors},
                        status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, UploadRejected):
        return Response({"detail": "upload refused; nothing was stored", "errors": [e.as_dict() for e in exc.errors]},
                        status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, RequestDataTooBig):
        return Response({"detail": f"request too large: {exc}"}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, (BadRequest, SuspiciousOperation)):
        return Response({"detail": f"bad request: {exc}"}, status=status.HTTP_400_BAD_REQUEST)
    return drf_handler(exc, context)
