"""The schema is the API. Two halves: every API response the suite produces is checked against the served schema
(tests/site/api/schema_check.py, autouse for the whole suite: these tests prove that check catches a drifted body and
an undeclared status, and that the declarations it relies on are there), and a Schemathesis run over the schema's
read operations against a live server, bounded to a few examples each so that it takes seconds."""

import json

import pytest
import schemathesis
from django.http import HttpResponse
from django.test import Client
from hypothesis import HealthCheck, given, settings
from schemathesis import checks

from tests.site.api import schema_check


@pytest.fixture
def schema(db):
    return schemathesis.openapi.from_dict(Client().get("/api/v1/schema/?format=json").json())


def test_the_check_refuses_a_body_that_drifted_from_the_schema(schema):
    drifted = HttpResponse(json.dumps([{"rank": 1}]), content_type="application/json")  # an array, not the object
    with pytest.raises(schema_check.SchemaMismatch, match="leaderboard"):
        schema_check.check(schema, "GET", "/api/v1/leaderboard/cpu-gloo/", "", drifted)
    undeclared = HttpResponse(json.dumps({"detail": "x"}), status=418, content_type="application/json")
    with pytest.raises(schema_check.SchemaMismatch, match="418"):
        schema_check.check(schema, "GET", "/api/v1/profiles/", "", undeclared)
    fine = HttpResponse(json.dumps({"detail": "Not found."}), status=404, content_type="application/json")
    schema_check.check(schema, "GET", "/api/v1/submissions/1/", "", fine)


def test_the_check_wraps_every_test_clients_request():
    from django.test.client import Client as DjangoClient

    assert getattr(DjangoClient.request, "checks_the_schema", False), "the suite-wide check is not installed"


def test_the_schema_declares_what_the_api_answers(schema):
    raw = schema.raw_schema
    detail = raw["paths"]["/api/v1/submissions/{id}/"]["get"]["responses"]
    body = raw["components"]["schemas"]["SubmissionDetailResponse"]["properties"]
    assert {"status", "scores", "transcripts", "audits", "editable"} <= set(body)
    assert {"401", "403", "404"} <= set(detail)
    board = raw["components"]["schemas"]["LeaderboardResponse"]["properties"]
    assert set(board) == {"profile", "ranked_profile", "sections"}
    upload = raw["paths"]["/api/v1/submissions/"]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    from django.conf import settings as django_settings

    attempts = raw["components"]["schemas"][upload["$ref"].rsplit("/", 1)[1]]["properties"]["attempts"]
    assert attempts["maximum"] == django_settings.PKB_MAX_ATTEMPTS == 16


CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
]


def test_every_read_answers_as_the_schema_says_against_a_live_server(live_server, catalogue):
    # Schemathesis' own pytest loader (from_fixture) does not run under this pytest; each operation's cases are
    # drawn with Hypothesis here instead, a few per operation, derandomised so the run is the same each time.
    loaded = schemathesis.openapi.from_url(f"{live_server.url}/api/v1/schema/?format=json")
    reads = [result.ok() for result in loaded.get_all_operations() if result.ok().method == "get"]
    assert len(reads) >= 12
    for operation in reads:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=3, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
        )
        def answers_as_declared(case):
            case.call_and_validate(base_url=live_server.url, checks=CHECKS)

        answers_as_declared()
    # Drawn path parameters almost never name a real profile or problem: the real ones, once each, as well.
    real = {"slug": "cpu-gloo", "key": "1_allreduce"}
    for operation in reads:
        names = {p.name for p in operation.path_parameters}
        if names and names <= set(real):
            case = operation.Case(path_parameters={name: real[name] for name in names})
            assert case.call_and_validate(base_url=live_server.url, checks=CHECKS).status_code == 200, operation
