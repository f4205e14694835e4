"""Property-based fuzzing on PostgreSQL (issue 25): every API operation of the OpenAPI schema through Schemathesis,
and the pages' query strings and path segments through Hypothesis. The assertion is the one a hostile client cares
about: no answer is a 5xx. Bounded in examples per operation so it stays a unit-test-sized run."""

from __future__ import annotations

import urllib.parse

import pytest
import schemathesis
from django.test import Client
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from leaderboard.accounts import services as accounts_services
from leaderboard.submissions import services as submissions_services
from tests.site.conftest import judge_document

API_EXAMPLES = 40
PAGE_EXAMPLES = 60
FUZZ = settings(
    max_examples=API_EXAMPLES,
    deadline=None,
    database=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture
def fuzz_world(owner, submit, finish):
    """One published, judged submission and a token with every scope: ids that exist next to ones that do not."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    submission = submit(owner)
    finish(submission.jobs.get(), judge_document())
    submissions_services.submission_publish(submission, owner)
    _, raw = accounts_services.token_create(owner.submitter, "fuzz", ["read", "submit"])
    # The WSGI handler closes the database connection after each request; the test's transaction lives on it
    # (Django's test Client disconnects the same receivers).
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield {"submission": submission, "token": raw}
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def _load_schema():
    """The schema drf-spectacular serves at /api/v1/schema/, built once at collection (no database needed), with
    calls going in-process to the site's WSGI application."""
    from django.core.wsgi import get_wsgi_application
    from drf_spectacular.generators import SchemaGenerator

    loaded = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
    loaded.app = get_wsgi_application()
    return loaded


SCHEMA = _load_schema()
# schemathesis.pytest's own parametrize reads a private pytest attribute that pytest 9 removed: one test per
# operation, drawing cases from the operation's strategy, does the same.
OPERATIONS = [result.ok() for result in SCHEMA.get_all_operations()]


def test_every_api_route_is_fuzzed():
    """The schema lists every API route, so the fuzz below reaches all of them."""
    from django.urls import get_resolver

    labels = {op.path for op in OPERATIONS}
    assert len(OPERATIONS) >= 20
    assert {
        "/api/v1/submissions/",
        "/api/v1/feedback/",
        "/api/v1/leaderboard/{slug}/",
        "/api/v1/problems/{key}/",
    } <= labels
    assert get_resolver()  # the routes resolve in this process


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.label)
def test_no_api_operation_answers_5xx(operation, fuzz_world):
    headers = {"Authorization": f"Bearer {fuzz_world['token']}"}

    # Positive cases follow the schema (they reach the views' logic); negative ones break it on purpose (wrong
    # types, out-of-range numbers, missing fields) and must meet a 4xx.
    cases = st.one_of(operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE))

    @FUZZ
    @given(case=cases)
    def check(case):
        response = case.call(headers=headers)
        assert response.status_code < 500, (case.method, case.formatted_path, case.query, response.text[:500])

    check()


# --- pages --------------------------------------------------------------------------------------------------------

# Values a hostile query string carries: other scripts' digits, huge or float-looking numbers, NUL and control
# characters, markup; plus whatever Hypothesis draws.
NASTY = st.sampled_from(
    [
        "\u00b2",
        "\u0663",
        "1e20",
        "9999999999999999999",
        "-1",
        "0",
        "NaN",
        "\x00",
        "a\nb",
        "<script>alert(1)</script>",
        "%00",
        " 1",
        "",
        "best_of_k",
        "correct",
        "csv",
        "json",
        "cpu-gloo",
    ]
)
VALUES = st.one_of(NASTY, st.text(max_size=30), st.integers(min_value=-(2**70), max_value=2**70).map(str))
KEYS = st.sampled_from(["profile", "protocol", "backend", "k", "sort", "page", "format", "offset", "limit", "only"])
QUERIES = st.dictionaries(KEYS, VALUES, max_size=5)
PAGES = [
    "/",
    "/leaderboard/cpu-gloo/",
    "/problems/",
    "/problems/1_allreduce/",
    "/problems/1/",
    "/api/v1/leaderboard/cpu-gloo/",
    "/api/v1/problems/",
    "/api/v1/problems/1/",
]


def _get(client: Client, path: str, query: dict):
    # Surrogates cannot be encoded by any client; everything else goes through percent-encoding.
    encoded = urllib.parse.urlencode({k: v.encode("utf-8", "replace") for k, v in query.items()})
    return client.get(f"{path}?{encoded}")


@pytest.mark.parametrize("path", PAGES + ["submission"])
def test_page_query_strings_never_answer_5xx(path, fuzz_world):
    client = Client(raise_request_exception=False)
    if path == "submission":
        path = fuzz_world["submission"].get_absolute_url()

    @settings(
        max_examples=PAGE_EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(query=QUERIES)
    def check(query):
        response = _get(client, path, query)
        assert response.status_code < 500, (path, query, response.status_code)
        if response.status_code == 400 and not path.startswith("/api/"):
            assert b"not valid" in response.content  # the form's message, not a bare error page

    check()


SEGMENTS = st.one_of(NASTY, st.text(min_size=1, max_size=40))
ROUTES = [
    "/problems/{}/",
    "/submissions/{}/",
    "/submissions/{}/status.json",
    "/candidates/{}/code",
    "/results/{}.json",
    "/results/{}/logs",
    "/leaderboard/{}/",
    "/feedback/sessions/{}/",
    "/api/v1/problems/{}/",
    "/api/v1/submissions/{}/",
    "/api/v1/leaderboard/{}/",
    "/api/v1/feedback/seeds/{}/",
]


@settings(
    max_examples=PAGE_EXAMPLES * 2,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
@given(route=st.sampled_from(ROUTES), segment=SEGMENTS)
def test_path_segments_never_answer_5xx(catalogue, route, segment):
    client = Client(raise_request_exception=False)
    quoted = urllib.parse.quote(segment.encode("utf-8", "replace"), safe="")
    response = client.get(route.format(quoted))
    assert response.status_code < 500, (route, segment, response.status_code)


FORM_FIELDS = st.sampled_from(
    [
        "model",
        "agent",
        "agent_version",
        "backend",
        "protocol",
        "attempts",
        "selection",
        "profile",
        "tokens",
        "dollars",
        "label",
        "notes",
        "publish",
        "paths",
    ]
)


@settings(
    max_examples=PAGE_EXAMPLES, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
@given(
    fields=st.dictionaries(FORM_FIELDS, VALUES, max_size=6),
    token=st.dictionaries(st.sampled_from(["name", "scopes", "days"]), VALUES, max_size=3),
)
def test_page_forms_never_answer_5xx(fuzz_world, owner, fields, token):
    """The submit form (with a small valid archive, so the metadata reaches the upload checks) and the token form."""
    import io

    from tests.site.conftest import GOOD_1, zip_bytes

    client = Client(raise_request_exception=False)
    client.force_login(owner)
    archive = io.BytesIO(zip_bytes({"1_allreduce_cuda.py": GOOD_1}))
    archive.name = "run.zip"
    data = {"model": "m", "protocol": "one_shot", "attempts": "1", "profile": "cpu-gloo", **fields}
    response = client.post("/submit/", {**data, "archive": archive})
    assert response.status_code < 500, (fields, response.status_code)
    response = client.post("/account/", token)
    assert response.status_code < 500, (token, response.status_code)
