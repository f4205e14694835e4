"""Owners control their submissions (issue 26): withdraw a published one (off every leaderboard, problem page and
export; its results stay the owner's), delete an unpublished one (its evaluations stay charged), confirm before
publishing, and an identical re-upload refused with a link to the earlier submission. Services, pages and API."""

from __future__ import annotations

import csv
import io

import pytest
from rest_framework.test import APIClient

from leaderboard.accounts import selectors as accounts_selectors
from leaderboard.accounts import services as accounts_services
from leaderboard.accounts.models import QuotaCharge
from leaderboard.submissions import services as submissions_services
from leaderboard.submissions import uploads
from leaderboard.submissions.models import Submission
from tests.site.conftest import GOOD_1, GOOD_13, judge_document, meta


def _api_ids(client) -> set:
    body = client.get("/api/v1/leaderboard/cpu-gloo/").json()
    return {e["submission"]["id"] for section in body["sections"] for e in section["entries"]}


def _csv_ids(client, url) -> set:
    rows = list(csv.reader(io.StringIO(client.get(url).content.decode())))
    column = rows[0].index("submission")
    return {int(r[column]) for r in rows[1:]}


def _listed_everywhere(client, submission) -> dict:
    pk = submission.pk
    return {
        "leaderboard": f'data-submission="{pk}"' in client.get("/").content.decode(),
        "csv": pk in _csv_ids(client, "/?format=csv"),
        "api": pk in _api_ids(client),
        "problem": f"/submissions/{pk}/" in client.get("/problems/1_allreduce/").content.decode(),
        "problem_csv": pk in _csv_ids(client, "/problems/1_allreduce/?format=csv"),
    }


def test_withdraw_takes_it_off_every_listing_and_keeps_it_for_the_owner(client, owner, outsider, submit, finish):
    submission = submit(owner)
    result = finish(submission.jobs.get(), judge_document())
    submissions_services.submission_publish(submission, owner)
    assert all(_listed_everywhere(client, submission).values()), _listed_everywhere(client, submission)

    with pytest.raises(accounts_services.NotAllowed):
        submissions_services.submission_withdraw(submission, outsider)
    submissions_services.submission_withdraw(submission, owner)
    submission.refresh_from_db()
    assert submission.visibility == "withdrawn" and submission.withdrawn_at is not None
    assert not any(_listed_everywhere(client, submission).values()), _listed_everywhere(client, submission)
    assert submission.entry.listed is False and not submission.scores.filter(listed=True).exists()
    # Gone for others; the owner still reads the page, the result, the code and the logs.
    assert client.get(submission.get_absolute_url()).status_code == 404
    client.force_login(owner)
    page = client.get(submission.get_absolute_url()).content.decode()
    assert "withdrawn by its owner" in page and 'id="publish-form"' in page
    assert client.get(f"/results/{result.pk}/").status_code == 200
    assert client.get(f"/candidates/{submission.candidates.get().pk}/code").content == GOOD_1
    # A private submission is deleted, not withdrawn.
    private = submit(owner, {"13_gemm_allreduce_torch.py": GOOD_13})
    with pytest.raises(accounts_services.NotAllowed, match="can be deleted"):
        submissions_services.submission_withdraw(private, owner)


def test_delete_an_unpublished_submission_keeps_its_quota_charge(owner, outsider, submit, finish):
    submission = submit(owner)
    with pytest.raises(accounts_services.NotAllowed, match="queued or running"):
        submissions_services.submission_delete(submission, owner)
    finish(submission.jobs.get(), judge_document())
    with pytest.raises(accounts_services.NotAllowed):
        submissions_services.submission_delete(submission, outsider)
    charges = QuotaCharge.objects.filter(submitter=owner.submitter).count()
    submissions_services.submission_delete(submission, owner)
    assert not Submission.objects.filter(pk=submission.pk).exists()
    assert QuotaCharge.objects.filter(submitter=owner.submitter).count() == charges  # still counted
    assert accounts_selectors.quota_usage(owner.submitter)["daily"] == charges

    published = submit(owner, {"13_gemm_allreduce_torch.py": GOOD_13})
    finish(published.jobs.get(), judge_document())
    submissions_services.submission_publish(published, owner)
    submissions_services.submission_withdraw(published, owner)
    published.refresh_from_db()
    with pytest.raises(accounts_services.NotAllowed, match="withdraw"):
        submissions_services.submission_delete(published, owner)  # once published, the record stays


def test_identical_reupload_is_refused_with_a_link(owner, outsider, cpu):
    files = [("attempt_1/1_allreduce_torch.py", GOOD_1)]
    first = submissions_services.submission_create(owner.submitter, meta(), files)
    with pytest.raises(uploads.UploadRejected) as refused:
        submissions_services.submission_create(
            owner.submitter, meta(model="renamed"), files
        )  # same files, other metadata
    [error] = refused.value.errors
    # The message names the earlier submission once, by number; its path travels separately, as the link.
    assert error.rule == "duplicate" and f"#{first.pk}" in error.message and "/submissions/" not in error.message
    assert error.url == f"/submissions/{first.pk}/"
    assert Submission.objects.filter(submitter=owner.submitter).count() == 1  # nothing stored
    # Another user, or other files, are not duplicates.
    submissions_services.submission_create(outsider.submitter, meta(), files)
    submissions_services.submission_create(owner.submitter, meta(), [("1_allreduce_torch.py", GOOD_1 + b"\n# v2\n")])


def test_pages_confirm_withdraw_and_delete(client, owner, submit, finish):
    submission = submit(owner)
    finish(submission.jobs.get(), judge_document())
    client.force_login(owner)
    page = client.get(submission.get_absolute_url()).content.decode()
    assert 'id="publish-form"' in page and 'id="delete-form"' in page and 'name="confirm"' in page
    client.post(f"/submissions/{submission.pk}/publish", {"confirm": "yes"})
    page = client.get(submission.get_absolute_url()).content.decode()
    assert 'id="withdraw-form"' in page and 'id="delete-form"' not in page
    client.post(f"/submissions/{submission.pk}/withdraw")  # not confirmed: nothing happens
    submission.refresh_from_db()
    assert submission.visibility == "public"
    client.post(f"/submissions/{submission.pk}/withdraw", {"confirm": "yes"})
    submission.refresh_from_db()
    assert submission.visibility == "withdrawn"

    other = submit(owner, {"13_gemm_allreduce_torch.py": GOOD_13})
    finish(other.jobs.get(), judge_document())
    response = client.post(f"/submissions/{other.pk}/delete", {"confirm": "yes"})
    assert response.status_code == 302 and response["Location"] == "/account/"
    assert not Submission.objects.filter(pk=other.pk).exists()


def test_submit_form_refuses_an_identical_upload_with_a_link(client, owner, cpu):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(owner)
    form = {"model": "m", "protocol": "one_shot", "attempts": 1, "profile": "cpu-gloo", "selection_rule": "first"}
    first = client.post("/submit/", {**form, "files": SimpleUploadedFile("1_allreduce_torch.py", GOOD_1)})
    assert first.status_code == 302
    earlier = Submission.objects.get(submitter=owner.submitter)
    again = client.post("/submit/", {**form, "files": SimpleUploadedFile("1_allreduce_torch.py", GOOD_1)})
    assert again.status_code == 400
    html = again.content.decode()
    assert f'href="/submissions/{earlier.pk}/"' in html and "identical" in html


def test_api_withdraw_and_delete(owner, outsider, submit, finish):
    api = APIClient()
    published = submit(owner)
    finish(published.jobs.get(), judge_document())
    submissions_services.submission_publish(published, owner)
    private = submit(owner, {"13_gemm_allreduce_torch.py": GOOD_13})
    finish(private.jobs.get(), judge_document())

    api.force_authenticate(outsider)
    assert api.post(f"/api/v1/submissions/{published.pk}/withdraw/").status_code == 403
    assert api.delete(f"/api/v1/submissions/{private.pk}/").status_code == 404  # not visible to them
    api.force_authenticate(owner)
    assert api.delete(f"/api/v1/submissions/{published.pk}/").status_code == 403
    body = api.post(f"/api/v1/submissions/{published.pk}/withdraw/").json()
    assert body["visibility"] == "withdrawn"
    assert published.pk not in _api_ids(api)
    assert api.get(f"/api/v1/submissions/{published.pk}/").status_code == 200  # still the owner's
    assert api.delete(f"/api/v1/submissions/{private.pk}/").status_code == 204
    assert not Submission.objects.filter(pk=private.pk).exists()
    refused = api.post(
        "/api/v1/submissions/",
        {
            "model": "m",
            "protocol": "one_shot",
            "attempts": 1,
            "profile": "cpu-gloo",
            "selection_rule": "first",
            "files": _file(GOOD_13, "13_gemm_allreduce_torch.py"),
        },
        format="multipart",
    )
    assert refused.status_code == 201, refused.json()  # the deleted one's files are no duplicate any more
    again = api.post(
        "/api/v1/submissions/",
        {
            "model": "m",
            "protocol": "one_shot",
            "attempts": 1,
            "profile": "cpu-gloo",
            "selection_rule": "first",
            "files": _file(GOOD_1),
        },
        format="multipart",
    )
    assert again.status_code == 400 and again.json()["errors"][0]["rule"] == "duplicate"  # the withdrawn one's
    assert again.json()["errors"][0]["url"] == f"/submissions/{published.pk}/"


def _file(data: bytes, name: str = "1_allreduce_torch.py"):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data)
