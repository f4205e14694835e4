"""``GET /api/v1/``: every endpoint of the API, read from the URL configuration itself (the API's own routes and the
feedback loop's), so a new endpoint is listed the day it is routed (tests/site/api/test_api_root.py)."""
from __future__ import annotations

import re

from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

# A route's converters as the placeholders the listing shows.
PLACEHOLDERS = {"id": "{id}", "problem": "{id_or_stem}", "slug": "{profile}"}


def _template(route: str) -> str:
    return re.sub(r"<(?:(\w+):)?(\w+)>", lambda m: PLACEHOLDERS.get(m[1] or "", "{" + m[2] + "}"), route)


def endpoints() -> dict[str, str]:
    """{name: path template} of every named API route (``api-submission-status`` -> ``submission_status``)."""
    from leaderboard import urls as site_urls
    from leaderboard.api import urls as api_urls

    routes = [("/api/v1/" + str(p.pattern), p.name) for p in api_urls.urlpatterns]
    routes += [("/" + str(p.pattern), p.name) for p in site_urls.feedback_urlpatterns]
    return {name.removeprefix("api-").replace("-", "_") or "root": _template(route)
            for route, name in routes if name and name.startswith("api-") and name != "api-root"}


class ApiRoot(APIView):
    """The API's entry point: every endpoint's URL (templates with {placeholders} for the ones that take one)."""

    permission_classes = [AllowAny]

    @extend_schema(exclude=True)
    def get(self, request):
        base = request.build_absolute_uri("/").rstrip("/")
        return Response({name: base + route for name, route in endpoints().items()})
