"""``GET /api/v1/``: every endpoint of the API, read from the URL configuration itself (the API's own routes and the
feedback loop's), so a new endpoint is listed the day it is routed (tests/site/views/test_site_pages.py)."""

from __future__ import annotations

import re

from django.urls import URLPattern, URLResolver, get_resolver
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.api import response_shapes as shapes

# A route's converters as the placeholders the listing shows.
PLACEHOLDERS = {"id": "{id}", "problem": "{id_or_stem}", "slug": "{profile}"}


def _template(route: str) -> str:
    return re.sub(r"<(?:(\w+):)?(\w+)>", lambda m: PLACEHOLDERS.get(m[1] or "", "{" + m[2] + "}"), route)


def _routes(patterns, prefix: str = "/"):
    """(path, name) of every route under ``patterns``, included ones walked (the resolver, not the url modules:
    those import this one)."""
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern), pattern.name


def endpoints() -> dict[str, str]:
    """{name: path template} of every named API route (``api-submission-status`` -> ``submission_status``)."""
    return {
        name.removeprefix("api-").replace("-", "_"): _template(route)
        for route, name in _routes(get_resolver().url_patterns)
        if name and name.startswith("api-") and name != "api-root"
    }


class ApiRoot(APIView):
    """The API's entry point: every endpoint's URL (templates with {placeholders} for the ones that take one)."""

    permission_classes = [AllowAny]

    # its named fields; the feedback loop's endpoints come beside them
    @extend_schema(responses=shapes.ApiRootSerializer)
    def get(self, request):
        base = request.build_absolute_uri("/").rstrip("/")
        return Response({name: base + route for name, route in endpoints().items()})
