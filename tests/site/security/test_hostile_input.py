"""Issue 25, item by item: bad query values, path segments, form fields and metadata answer a clear 400 (JSON on the
API, the form's message on pages), never a 5xx; stored markup is shown as text; every page carries a CSP that
forbids inline script; server errors reach the log with their traceback; list endpoints cost a constant number of
queries."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from leaderboard.accounts import services as accounts_services
from leaderboard.submissions import services as submissions_services
from tests.site.conftest import GOOD_1, judge_document, zip_bytes

ROOT = Path(__file__).resolve().parents[3]
XSS = '</script><script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


@pytest.fixture
def published(owner, submit, finish):
    submission = submit(owner, model=XSS, agent=XSS, label=XSS)
    finish(submission.jobs.get(), judge_document())
    submissions_services.submission_publish(submission, owner)
    return submission


@pytest.fixture
def api(owner):
    client = APIClient()
    _, raw = accounts_services.token_create(owner.submitter, "t", ["read", "submit"])
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


# --- query strings and path segments ------------------------------------------------------------------------------

BAD_QUERIES = [
    "k=%C2%B2",
    "page=%C2%B2",
    "page=1e20",
    "page=99999999999999999999",
    "k=%D9%A3",
    "backend=a%00b",
    "profile=cpu%00gloo",
    "sort=nope",
    "protocol=nope",
    "format=xml",
]


@pytest.mark.parametrize("query", BAD_QUERIES)
@pytest.mark.parametrize("path", ["/", "/leaderboard/cpu-gloo/", "/problems/", "/problems/1_allreduce/"])
def test_bad_page_queries_answer_400_with_the_form_message(catalogue, path, query):
    response = Client(raise_request_exception=False).get(f"{path}?{query}")
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="bad-request"' in html and "A query parameter is not valid." in html
    field = query.split("=")[0]
    assert f"<strong>{field}</strong>" in html


@pytest.mark.parametrize(
    "query",
    [
        "offset=%C2%B2",
        "limit=%C2%B2",
        "offset=9999999999999999999",
        "limit=501",
        "limit=0",
        "k=%C2%B2",
        "page=1e20",
        "backend=%00",
        "profile=%00",
    ],
)
def test_bad_api_queries_answer_400_json(catalogue, query):
    path = "/api/v1/problems/1/" if query.startswith("page") else "/api/v1/leaderboard/cpu-gloo/"
    if query.startswith("profile"):
        path = "/api/v1/problems/"
    response = APIClient().get(f"{path}?{query}")
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json")
    assert query.split("=")[0] in json.dumps(response.json())


@pytest.mark.parametrize(
    "path",
    [
        "/problems/%C2%B2/",
        "/problems/%00/",
        "/submissions/99999999999999999999/",
        "/submissions/%C2%B2/",
        "/api/v1/submissions/99999999999999999999/",
        "/api/v1/problems/%00/",
        "/results/1%00.json",
        "/leaderboard/%00/",
    ],
)
def test_bad_path_segments_are_404(catalogue, path):
    assert Client(raise_request_exception=False).get(path).status_code == 404


def test_valid_queries_still_work(catalogue):
    client = Client()
    for url in [
        "/?protocol=best_of_k&k=2&sort=faster&page=1",
        "/problems/?profile=cpu-gloo&protocol=one_shot",
        "/problems/1/?page=3",
        "/?format=csv",
        "/api/v1/leaderboard/cpu-gloo/?offset=10&limit=500&k=1",
    ]:
        assert client.get(url).status_code in (200, 302), url


# --- form fields and metadata ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field,value",
    [
        ("tokens", "1e23"),
        ("tokens", str(10**23)),
        ("dollars", "NaN"),
        ("dollars", "Infinity"),
        ("attempts", "\u00b2"),
        ("model", "a\x00b"),
        ("feedback_for", "99999999999999999999"),
        ("feedback_for", "\u00b2"),
        ("label", "two\nlines"),
    ],
)
def test_bad_api_upload_fields_answer_400_json(api, cpu, field, value):
    data = {
        "model": "m",
        "protocol": "one_shot",
        "attempts": "1",
        "profile": "cpu-gloo",
        "archive": io.BytesIO(zip_bytes({"1_allreduce_cuda.py": GOOD_1})),
        field: value,
    }
    data["archive"].name = "run.zip"
    response = api.post("/api/v1/submissions/", data, format="multipart")
    assert response.status_code == 400, response.content
    assert field in json.dumps(response.json())


@pytest.mark.parametrize(
    "field,value",
    [
        ("tokens", "1e23"),
        ("tokens", str(10**23)),
        ("dollars", "NaN"),
        ("attempts", "\u00b2"),
        ("model", "a\x00b"),
        ("agent", "line\nbreak"),
    ],
)
def test_bad_page_upload_fields_show_the_form_error(client, owner, cpu, field, value):
    client.force_login(owner)
    data = {
        "model": "m",
        "protocol": "one_shot",
        "attempts": "1",
        "profile": "cpu-gloo",
        field: value,
        "archive": io.BytesIO(zip_bytes({"1_allreduce_cuda.py": GOOD_1})),
    }
    data["archive"].name = "run.zip"
    response = client.post("/submit/", data)
    assert response.status_code == 200  # the form again, with the field's error
    assert response.context["form"].errors.get(field), response.context["form"].errors
    assert owner.submitter.submissions.count() == 0


@pytest.mark.parametrize(
    "metadata,rule",
    [
        ({"tokens": 10**23}, "bad_metadata"),
        ({"dollars": "NaN"}, "bad_metadata"),
        ({"attempts": "\u00b2"}, "bad_metadata"),
        ({"model": "a\x00"}, "bad_metadata"),
        ({"model": ["list"]}, "bad_metadata"),
    ],
)
def test_bad_submission_json_is_refused(api, cpu, metadata, rule):
    document = {"model": "m", "protocol": "one_shot", "attempts": 1, "profile": "cpu-gloo", **metadata}
    archive = io.BytesIO(zip_bytes({"1_allreduce_cuda.py": GOOD_1, "submission.json": json.dumps(document).encode()}))
    archive.name = "run.zip"
    response = api.post("/api/v1/submissions/", {"archive": archive}, format="multipart")
    assert response.status_code == 400
    assert [e["rule"] for e in response.json()["errors"]] == [rule]


def test_deep_json_is_a_400(api, cpu):
    deep = "[" * 100_000 + "]" * 100_000
    archive = io.BytesIO(zip_bytes({"1_allreduce_cuda.py": GOOD_1, "submission.json": deep.encode()}))
    archive.name = "run.zip"
    response = api.post(
        "/api/v1/submissions/",
        {"archive": archive, "model": "m", "protocol": "one_shot", "attempts": "1", "profile": "cpu-gloo"},
        format="multipart",
    )
    assert response.status_code == 400 and "nested too deep" in response.json()["errors"][0]["message"]
    response = api.post("/api/v1/feedback/sessions/", deep, content_type="application/json")
    assert response.status_code == 400 and "nested too deep" in response.json()["detail"]


def test_newline_in_an_uploaded_file_name_is_refused(api, cpu):
    archive = io.BytesIO(zip_bytes({"1_allreduce_cuda.py\n": GOOD_1}))
    archive.name = "run.zip"
    response = api.post(
        "/api/v1/submissions/",
        {"archive": archive, "model": "m", "protocol": "one_shot", "attempts": "1", "profile": "cpu-gloo"},
        format="multipart",
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["rule"] == "bad_file_name"


def test_code_view_quotes_a_hostile_stored_file_name(client, owner, submit):
    """A name stored before names were checked still gets a well-formed header, not a 500."""
    submission = submit(owner)
    candidate = submission.candidates.get()
    type(candidate).objects.filter(pk=candidate.pk).update(filename='attempt_1/1_allreduce_"cuda\n.py')
    client.force_login(owner)
    response = client.get(f"/candidates/{candidate.pk}/code")
    assert response.status_code == 200
    assert "\n" not in response["Content-Disposition"]


# --- limits answer the API's JSON -------------------------------------------------------------------------------


def test_too_many_files_answers_json(api, cpu, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 3
    files = []
    for i in range(5):
        handle = io.BytesIO(GOOD_1)
        handle.name = f"{i}.py"
        files.append(handle)
    response = api.post("/api/v1/submissions/", {"files": files, "model": "m"}, format="multipart")
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json") and "detail" in response.json()


def test_too_large_a_body_answers_json_413_before_reading(api, cpu, settings):
    settings.PKB_MAX_UPLOAD_BYTES = 2048
    big = io.BytesIO(b"#" * (2 * 1024 * 1024))
    big.name = "run.zip"
    response = api.post("/api/v1/submissions/", {"archive": big, "model": "m"}, format="multipart")
    assert response.status_code == 413
    assert response["Content-Type"].startswith("application/json") and "too large" in response.json()["detail"]


def test_too_large_a_body_on_the_page_is_a_413_page(client, owner, cpu, settings):
    settings.PKB_MAX_UPLOAD_BYTES = 2048
    client.force_login(owner)
    big = io.BytesIO(b"#" * (2 * 1024 * 1024))
    big.name = "run.zip"
    client.raise_request_exception = False
    response = client.post("/submit/", {"archive": big, "model": "m"})
    assert response.status_code == 413 and b"too large" in response.content


# --- escaping and CSP ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["/", "/problems/", "/problems/1_allreduce/", "submission", "/account/"])
def test_stored_markup_is_escaped_everywhere(client, owner, published, url):
    client.force_login(owner)
    html = client.get(published.get_absolute_url() if url == "submission" else url).content.decode()
    assert XSS not in html
    assert "<script>window.__xss" not in html and "<img src=x" not in html
    # The JSON for the plots sits in json_script elements, escaped so that no "</script>" can close them.
    for data in re.findall(r'<script id="[a-z]+-data" type="application/json">(.*?)</script>', html, re.S):
        assert "<" not in data
        json.loads(data)


def test_inline_script_and_safe_filter_are_gone_from_templates():
    """A static guard over every template: data reaches pages only through escaping or json_script."""
    templates = list((ROOT / "templates").rglob("*.html")) + list((ROOT / "leaderboard").rglob("templates/**/*.html"))
    assert len(templates) > 10
    for path in templates:
        text = path.read_text()
        assert "|safe" not in text or path.name == "problem.html" and text.count("|safe") == 1, path
        for tag in re.findall(r"<script\b[^>]*>", text):
            assert "src=" in tag, (path, tag)  # no inline script (json_script writes its own tag)
        assert not re.search(r"\son[a-z]+\s*=", text), path  # no inline event handlers


def test_security_headers(client, catalogue):
    response = client.get("/")
    policy = response["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    assert directives["script-src"] == "'self'"
    assert "'unsafe-inline'" not in directives["script-src"] and "'unsafe-eval'" not in directives["script-src"]
    assert directives["object-src"] == "'none'" and directives["base-uri"] == "'none'"
    assert directives["frame-ancestors"] == "'none'" and directives["default-src"] == "'self'"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["X-Frame-Options"] == "DENY"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"
    assert "Content-Security-Policy" in APIClient().get("/api/v1/profiles/")


# --- server errors are logged ------------------------------------------------------------------------------------


def test_a_forced_500_reaches_the_log_with_its_traceback(tmp_path):
    """The production settings (leaderboard.settings, DEBUG off), in a process of their own: a view that raises
    answers 500 and django.request writes the traceback to the console handler."""
    script = (
        "import django\n"
        "django.setup()\n"
        "import leaderboard.pages.views as v\n"
        "def boom(request):\n"
        "    raise RuntimeError('forced failure for the log test')\n"
        "v.healthz = boom  # before the URLconf is first loaded\n"
        "from django.test import Client\n"
        "response = Client(raise_request_exception=False).get('/healthz')\n"
        "print('STATUS', response.status_code)\n"
    )
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    env.update(
        DJANGO_SETTINGS_MODULE="leaderboard.settings",
        PKB_DATA_DIR=str(tmp_path),
        DJANGO_DEBUG="0",
        DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3",
        DJANGO_SECRET_KEY="log-test",
        PYTHONPATH=str(ROOT),
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert "STATUS 500" in done.stdout, done.stderr
    assert "ERROR django.request: Internal Server Error: /healthz" in done.stderr
    assert "Traceback (most recent call last)" in done.stderr
    assert "RuntimeError: forced failure for the log test" in done.stderr


# --- query counts of every list endpoint -----------------------------------------------------------------------------


def _count(client, url) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return len(ctx.captured_queries)


LISTS = [
    "/api/v1/submissions/",
    "/api/v1/profiles/",
    "/api/v1/problems/",
    "/api/v1/leaderboard/cpu-gloo/",
    "/api/v1/leaderboard/cpu-gloo/?protocol=one_shot&limit=500",
    "/api/v1/feedback/sessions/",
    "/account/",
    "/",
    "/problems/",
    "/problems/1_allreduce/",
]


@pytest.mark.parametrize("url", LISTS)
def test_list_endpoints_cost_the_same_queries_at_two_sizes(owner, submit, finish, url):
    from leaderboard.feedback import services as feedback_services

    client = APIClient()
    client.force_login(owner)

    def grow(count):
        for _ in range(count):
            submission = submit(owner)
            finish(submission.jobs.get(), judge_document())
            submissions_services.submission_publish(submission, owner)
            feedback_services.session_open(owner.submitter, "cpu-gloo", "s")

    grow(2)
    small = _count(client, url)
    grow(10)
    assert _count(client, url) == small


def test_deep_paths_json_is_a_400(api, client, owner, cpu):
    deep = "[" * 100_000 + "]" * 100_000
    handle = io.BytesIO(GOOD_1)
    handle.name = "1_allreduce_cuda.py"
    response = api.post(
        "/api/v1/submissions/",
        {
            "files": [handle],
            "paths": deep,
            "model": "m",
            "protocol": "one_shot",
            "attempts": "1",
            "profile": "cpu-gloo",
        },
        format="multipart",
    )
    assert response.status_code == 400 and [e["field"] for e in response.json()["errors"]] == ["paths"]
    client.force_login(owner)
    handle.seek(0)
    response = client.post(
        "/submit/",
        {
            "files": [handle],
            "paths": deep,
            "model": "m",
            "protocol": "one_shot",
            "attempts": "1",
            "profile": "cpu-gloo",
        },
    )
    assert response.status_code == 200 and response.context["form"].errors.get("paths")
    assert owner.submitter.submissions.count() == 0
