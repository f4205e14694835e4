"""Every API response the suite produces is checked against the served schema (GET /api/v1/schema/), so the schema
and the API cannot drift apart: Django's test client (and DRF's APIClient, built on it) is wrapped for the whole
session (tests/site/conftest.py and tests/feedback/conftest.py use :func:`api_responses_match_the_schema`), and each
response to a path under /api/v1/ that the schema names is validated by Schemathesis (status code declared, media type,
body against its schema).

A test that means to send what the schema does not describe (a hostile body, an unknown path) is still checked: the
schema declares the refusals too (leaderboard/api/schema_hooks.py). ``PKB_SCHEMA_CHECK=0`` turns the check off for a
run that studies something else; the check's own test (test_schema_is_the_api.py) proves it catches a drifted body."""

from __future__ import annotations

import json
import os

import pytest

API = "/api/v1/"
NOT_CHECKED = ("/api/v1/schema/", "/api/v1/docs/")
_state: dict = {}


class SchemaMismatch(AssertionError):
    pass


def served_schema(request_fn, client):
    """The schema as the site serves it, loaded once a session (through the unwrapped client)."""
    if "schema" not in _state:
        import schemathesis

        response = request_fn(client, PATH_INFO="/api/v1/schema/", REQUEST_METHOD="GET", QUERY_STRING="format=json")
        assert response.status_code == 200, response.content[:300]
        _state["schema"] = schemathesis.openapi.from_dict(json.loads(response.content))
    return _state["schema"]


def check(schema, method: str, path: str, query: str, response) -> None:
    """Raise :class:`SchemaMismatch` where ``response`` is not what the schema declares for ``method path``."""
    import requests
    from schemathesis.core.transport import Response

    operation = schema.find_operation_by_path(method.lower(), path)
    if operation is None:  # not an operation of the API (an unknown path: Django's 404)
        return
    declared = operation.definition.raw.get("responses") or {}
    if str(response.status_code) not in declared and "default" not in declared:
        raise SchemaMismatch(
            f"{method} {path}?{query} -> {response.status_code}: a status the schema does not declare "
            f"(it declares {', '.join(sorted(declared))})\n{response.content[:300]!r}"
        )
    prepared = requests.Request(method, f"http://testserver{path}" + (f"?{query}" if query else "")).prepare()
    headers = {k.lower(): [v] for k, v in response.items()}
    wrapped = Response(
        status_code=response.status_code,
        headers=headers,
        content=response.content,
        request=prepared,
        elapsed=0.0,
        verify=True,
    )
    try:
        schema.validate_response(operation, wrapped)
    except Exception as exc:  # noqa: BLE001 - any schemathesis error (a check's Failure, InvalidSchema) is a mismatch
        raise SchemaMismatch(
            f"{method} {path}?{query} -> {response.status_code}: not as the schema declares:\n"
            f"{exc}\n{response.content[:500]!r}"
        ) from None


def _wrap(original):
    def request(client, **environ):
        response = original(client, **environ)
        path = environ.get("PATH_INFO", "")
        if (
            path.startswith(API)
            and not path.startswith(NOT_CHECKED)
            and response.status_code < 500
            and not getattr(response, "streaming", False)
        ):
            check(
                served_schema(original, client),
                environ.get("REQUEST_METHOD", "GET"),
                path,
                environ.get("QUERY_STRING", ""),
                response,
            )
        return response

    request.checks_the_schema = True
    return request


@pytest.fixture(autouse=True, scope="session")
def api_responses_match_the_schema():
    if os.environ.get("PKB_SCHEMA_CHECK", "1") == "0":
        yield
        return
    from django.test.client import Client

    original = Client.request
    if getattr(original, "checks_the_schema", False):  # installed by another directory's conftest already
        yield
        return
    Client.request = _wrap(original)
    try:
        yield
    finally:
        Client.request = original
