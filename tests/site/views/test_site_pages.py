"""Pages a lab expects around the leaderboard (issue 26): code and log pages inside the site's navigation, an API
root and a browsable API page served from the site's own files, styled 404 and 500 pages, a favicon."""

from __future__ import annotations

import re

import pytest

from tests.site.conftest import judge_document


def test_code_and_log_pages_have_navigation_and_keep_privacy(client, owner, outsider, submit, finish):
    submission = submit(owner)
    result = finish(submission.jobs.get(), judge_document())
    candidate = submission.candidates.get()
    client.force_login(owner)
    page = client.get(submission.get_absolute_url()).content.decode()
    assert f'href="/candidates/{candidate.pk}/"' in page and f'href="/results/{result.pk}/"' in page
    code = client.get(f"/candidates/{candidate.pk}/").content.decode()
    assert 'aria-label="Main"' in code and f'href="/submissions/{submission.pk}/"' in code
    assert f'href="/candidates/{candidate.pk}/code"' in code and "def solution" in code
    logs = client.get(f"/results/{result.pk}/").content.decode()
    assert 'aria-label="Main"' in logs and "secret log line" in logs and f'href="/results/{result.pk}/logs"' in logs
    assert f'href="/submissions/{submission.pk}/"' in logs
    client.force_login(outsider)  # private: neither page exists for anyone else
    assert client.get(f"/candidates/{candidate.pk}/").status_code == 404
    assert client.get(f"/results/{result.pk}/").status_code == 404


def test_styled_404_html_and_json_for_the_api(client, db):
    response = client.get("/submissions/999999/")
    assert response.status_code == 404
    html = response.content.decode()
    assert 'aria-label="Main"' in html and 'id="not-found"' in html and "favicon.svg" in html
    response = client.get("/api/v1/no-such-thing/")
    assert response.status_code == 404 and response.json() == {"detail": "Not found."}


def test_500_page_is_styled_and_needs_no_database(rf):
    from leaderboard.pages import views

    response = views.server_error(rf.get("/problems/"))
    assert response.status_code == 500 and b'id="server-error"' in response.content and b"site" in response.content
    assert views.server_error(rf.get("/api/v1/x/")).status_code == 500


def test_api_root_lists_every_endpoint(client, db):
    body = client.get("/api/v1/").json()
    for key in ("docs", "schema", "profiles", "problems", "leaderboard", "submissions", "me"):
        assert body[key].startswith("http://testserver/api/v1/"), key
    assert client.get(body["profiles"]).status_code == 200


def test_api_docs_page_uses_local_files_and_no_inline_script(client, db):
    html = client.get("/api/v1/docs/").content.decode()
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, re.S)
    assert scripts and all("src=" in attrs and not body.strip() for attrs, body in scripts)
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower()
    base = client.get("/").content.decode()
    assert 'href="/api/v1/docs/"' in base


@pytest.mark.parametrize("url", ["/favicon.ico"])
def test_favicon(client, db, url):
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].endswith("favicon.svg")
