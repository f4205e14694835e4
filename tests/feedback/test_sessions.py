"""Sessions and runs through the API: token scopes, ownership, what can be linked, closed sessions, bad requests."""

import pytest
from rest_framework.test import APIClient

from leaderboard.accounts import services as accounts_services
from leaderboard.feedback import services
from leaderboard.feedback.models import FeedbackRun
from tests.feedback.conftest import source

CODE = source("good_1.py")


def client_for(user, scopes=("read", "submit")):
    raw = accounts_services.token_create(user.submitter, "t", list(scopes))[1]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_open_list_and_show(owner, cpu):
    client = client_for(owner)
    opened = client.post("/api/v1/feedback/sessions/", {"label": "search 1"}, format="json")
    assert opened.status_code == 201 and opened.json()["profile"] == "cpu-gloo" and opened.json()["open"]
    assert [s["id"] for s in client.get("/api/v1/feedback/sessions/").json()] == [opened.json()["id"]]
    assert client.get(f"/api/v1/feedback/sessions/{opened.json()['id']}/").json()["metering"]["runs"] == 0
    assert client.post("/api/v1/feedback/sessions/", {"profile": "nope"}, format="json").status_code == 400
    assert (
        client.post("/api/v1/feedback/sessions/", {"profile": "gpu-h200x8"}, format="json").status_code == 400
    )  # not accepting until staff open it


def test_scopes_and_anonymous(owner, session, client):
    reader = client_for(owner, ["read"])
    body = {"session": session.pk, "problem": "1", "code": CODE}
    assert reader.post("/api/v1/feedback/", body, format="json").status_code == 403
    assert client.post("/api/v1/feedback/", body, content_type="application/json").status_code in (401, 403)
    bad = APIClient()
    bad.credentials(HTTP_AUTHORIZATION="Bearer pkb_0_nope")
    assert bad.post("/api/v1/feedback/", body, format="json").status_code == 401
    assert not FeedbackRun.objects.exists()


def test_bad_requests_store_nothing(owner, session):
    client = client_for(owner)
    cases = [
        ({"session": session.pk, "problem": "1"}, "code"),
        ({"session": session.pk, "problem": "999", "code": CODE}, "problem"),
        ({"session": session.pk, "problem": "2", "code": CODE}, "problem"),  # not implemented in the tests
        ({"session": 999999, "problem": "1", "code": CODE}, "session"),
        ({"session": session.pk, "problem": "1", "code": CODE, "M": 10**9}, "M"),
    ]
    for body, field in cases:
        response = client.post("/api/v1/feedback/", body, format="json")
        assert response.status_code == 400, (body, response.content)
        assert response.json()["errors"][0]["field"] == field
    assert not FeedbackRun.objects.exists()


def test_multipart_upload_of_a_file(owner, session):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = client_for(owner)
    response = client.post(
        "/api/v1/feedback/",
        {"session": session.pk, "problem": "1_allreduce", "file": SimpleUploadedFile("mine.py", CODE.encode())},
        format="multipart",
    )
    assert response.status_code == 202 and response.json()["filename"] == "mine.py"


def test_runs_and_sessions_are_the_owners(owner, outsider, session):
    run = services.run_create(owner.submitter, session.pk, "1", CODE)
    spy = client_for(outsider)
    assert spy.get(f"/api/v1/feedback/runs/{run.pk}/").status_code == 404
    assert spy.get(f"/api/v1/feedback/sessions/{session.pk}/").status_code == 404
    response = spy.post("/api/v1/feedback/", {"session": session.pk, "problem": "1", "code": CODE}, format="json")
    assert response.status_code == 400 and "not one of yours" in response.json()["detail"]
    spy_page = APIClient()
    spy_page.force_login(outsider)
    assert spy_page.get(f"/feedback/runs/{run.pk}/").status_code == 404


def test_linking_rules(owner, outsider, session, submit, gpu):
    client = client_for(owner)
    one_shot = submit(owner)
    agentic = submit(owner, protocol="agentic_feedback")
    theirs = submit(outsider, protocol="agentic_feedback")
    link = f"/api/v1/feedback/sessions/{session.pk}/link/"
    refused = client.post(link, {"submission": one_shot.pk}, format="json")
    assert refused.status_code == 400 and "only agentic" in refused.json()["detail"]
    assert client.post(link, {"submission": theirs.pk}, format="json").status_code == 404  # not visible to us
    linked = client.post(link, {"submission": agentic.pk}, format="json")
    assert linked.status_code == 200 and linked.json()["submission"] == agentic.pk and not linked.json()["open"]
    # closed: no more runs; linked: cannot be moved to another submission
    late = client.post("/api/v1/feedback/", {"session": session.pk, "problem": "1", "code": CODE}, format="json")
    assert late.status_code == 400 and "closed" in late.json()["detail"]
    other = submit(owner, protocol="agentic_feedback")
    assert client.post(link, {"submission": other.pk}, format="json").status_code == 400
    # a session on another profile, or someone else's, cannot be linked
    gpu_session = services.session_open(owner.submitter, "gpu-h200x8")
    with pytest.raises(services.Refused, match="ran on gpu-h200x8"):
        services.session_link(gpu_session, other, owner)
    with pytest.raises(accounts_services.NotAllowed):
        services.session_link(gpu_session, other, outsider)


def test_link_from_the_submission_page(owner, session, submit, client):
    agentic = submit(owner, protocol="agentic_feedback")
    client.force_login(owner)
    page = client.get(agentic.get_absolute_url()).content.decode()
    assert "Link session #" in page and "Profile runs" in page
    response = client.post(f"/submissions/{agentic.pk}/feedback-session", {"session": str(session.pk)})
    assert response.status_code == 302
    session.refresh_from_db()
    assert session.submission_id == agentic.pk
