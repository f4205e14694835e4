"""The owner corrects a submission's self-reported metadata (web form and PATCH /api/v1/submissions/<id>/): each change
recorded and shown on the page; what was judged (protocol, k, profile, files) refused as a new submission."""

import pytest
from rest_framework.test import APIClient

from leaderboard.accounts import services as accounts_services
from leaderboard.submissions import services as submissions_services
from leaderboard.submissions.models import MetadataChange, Submission
from tests.site.conftest import GOOD_1

pytestmark = pytest.mark.django_db


@pytest.fixture
def submission(owner, cpu):
    fields = {
        "model": "gpt-typo",
        "protocol": "one_shot",
        "attempts": 1,
        "profile": "cpu-gloo",
        "label": "run 1",
        "tokens": 10,
        "dollars": "1.5",
    }
    return submissions_services.submission_create(owner.submitter, fields, [("1_allreduce_torch.py", GOOD_1)])


def api_for(user, scopes=("read", "submit")):
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {accounts_services.token_create(user.submitter, 't', list(scopes))[1]}"
    )
    return client


def test_patch_corrects_recorded_fields_and_the_history_shows_them(owner, submission, client):
    url = f"/api/v1/submissions/{submission.pk}/"
    response = api_for(owner).patch(url, {"model": "gpt-5", "dollars": "2.25", "notes": "fixed"}, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["submission"]["model_name"] == "gpt-5" and body["submission"]["reported_dollars"] == "2.25"
    assert sorted(body["changed"]) == ["model_name", "notes", "reported_dollars"]
    assert body["history"][0]["changes"]["model_name"] == ["gpt-typo", "gpt-5"]
    assert body["history"][0]["changed_by"] == "alice"
    submission.refresh_from_db()
    assert (submission.model_name, str(submission.reported_dollars), submission.label) == ("gpt-5", "2.25", "run 1")
    # Unchanged values record nothing.
    again = api_for(owner).patch(url, {"model": "gpt-5"}, format="json")
    assert again.status_code == 200 and again.json()["changed"] == [] and MetadataChange.objects.count() == 1
    client.force_login(owner)
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "Metadata corrections" in page and "model from “gpt-typo” to “gpt-5”" in page
    assert "dollars (self-reported) from “1.50” to “2.25”" in page


@pytest.mark.parametrize(
    "field, value", [("protocol", "best_of_k"), ("attempts", 2), ("profile", "gpu-h200x8"), ("files", "x")]
)
def test_what_was_judged_cannot_change(owner, submission, field, value):
    response = api_for(owner).patch(
        f"/api/v1/submissions/{submission.pk}/", {field: value, "label": "x"}, format="json"
    )
    assert response.status_code == 400
    error = response.json()["errors"][0]
    assert error["field"] == field and "new submission" in error["message"] and "duplicate rule" in error["message"]
    submission.refresh_from_db()
    assert submission.label == "run 1" and not MetadataChange.objects.exists()  # nothing applied


def test_bad_values_and_other_users_are_refused(owner, outsider, submission):
    url = f"/api/v1/submissions/{submission.pk}/"
    bad = api_for(owner).patch(url, {"dollars": "NaN", "model": ""}, format="json")
    assert bad.status_code == 400 and {e["field"] for e in bad.json()["errors"]} == {"dollars", "model"}
    assert api_for(owner, ["read"]).patch(url, {"label": "x"}, format="json").status_code == 403  # no submit scope
    assert api_for(outsider).patch(url, {"label": "x"}, format="json").status_code == 404  # private: not seen
    submissions_services.submission_publish(submission, owner)
    assert api_for(outsider).patch(url, {"label": "x"}, format="json").status_code == 403  # public, not theirs
    submission.refresh_from_db()
    assert submission.label == "run 1"


def test_web_form_corrects_and_refuses_others(owner, outsider, submission, client):
    url = f"/submissions/{submission.pk}/metadata"
    client.force_login(owner)
    form = client.get(url).content.decode()
    assert 'value="gpt-typo"' in form and "duplicate rule" in form and "new submission" in form
    response = client.post(
        url,
        {
            "model": "gpt-5",
            "agent": "",
            "agent_version": "",
            "label": "run 1",
            "notes": "",
            "tokens": "10",
            "dollars": "1.50",
        },
    )
    assert response.status_code == 302 and response["Location"] == f"/submissions/{submission.pk}/"
    change = MetadataChange.objects.get()
    assert change.changes == {"model_name": ["gpt-typo", "gpt-5"]} and change.changed_by == owner
    assert "Correct the metadata" in client.get(f"/submissions/{submission.pk}/").content.decode()
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    assert client.post(url, {"model": "stolen"}).status_code == 404
    assert Submission.objects.get().model_name == "gpt-5"


def test_schema_declares_the_patch(client):
    schema = client.get("/api/v1/schema/?format=json").json()
    patch = schema["paths"]["/api/v1/submissions/{id}/"]["patch"]
    assert {"200", "400", "403", "404"} <= set(patch["responses"])
    assert "MetadataPatch" in str(patch["requestBody"])
