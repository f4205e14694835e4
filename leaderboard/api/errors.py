from rest_framework.views import exception_handler as drf_handler


def exception_handler(exc, context):
    """DRF's handler; Django's Http404/PermissionDenied become JSON too (DRF already maps them)."""
    return drf_handler(exc, context)
