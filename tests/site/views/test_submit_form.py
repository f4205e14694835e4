"""The upload form and the account page (tokens, quota)."""

from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.accounts.models import ApiToken
from leaderboard.submissions.models import Submission
from tests.site.conftest import GOOD_1, zip_bytes

FORM = {"model": "form-model", "protocol": "one_shot", "attempts": "1", "profile": "cpu-gloo"}


def test_login_is_required(client, cpu):
    response = client.get("/submit/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_upload_by_form(client, owner, cpu):
    client.force_login(owner)
    archive = SimpleUploadedFile("run.zip", zip_bytes({"1_allreduce_torch.py": GOOD_1}))
    response = client.post("/submit/", {**FORM, "archive": archive, "publish": "on"})
    submission = Submission.objects.get()
    assert response.status_code == 302 and response["Location"] == submission.get_absolute_url()
    assert submission.visibility == "public" and submission.jobs.count() == 1


def test_directory_upload_keeps_relative_paths(client, owner, cpu):
    client.force_login(owner)
    files = [SimpleUploadedFile("1_allreduce_torch.py", GOOD_1), SimpleUploadedFile("1_allreduce_torch.py", GOOD_1)]
    response = client.post(
        "/submit/",
        {
            **FORM,
            "protocol": "best_of_k",
            "attempts": "2",
            "files": files,
            "paths": '["attempt_1/1_allreduce_torch.py", "attempt_2/1_allreduce_torch.py"]',
        },
    )
    assert response.status_code == 302
    assert Submission.objects.get().candidates.count() == 2


def test_refusal_lists_file_and_rule(client, owner, cpu):
    client.force_login(owner)
    archive = SimpleUploadedFile(
        "run.zip", zip_bytes({"1_allreduse_torch.py": GOOD_1, "1_allreduce_torch.py": b"\xff"})
    )
    response = client.post("/submit/", {**FORM, "archive": archive})
    html = response.content.decode()
    assert response.status_code == 400 and "nothing was stored" in html
    assert "1_allreduse_torch.py" in html and "unknown_problem" in html and "not_utf8" in html
    assert not Submission.objects.exists()


def test_account_creates_and_revokes_tokens(client, owner, cpu):
    client.force_login(owner)
    html = client.post("/account/", {"name": "laptop", "scopes": ["read", "submit"], "days": "30"}).content.decode()
    token = ApiToken.objects.get()
    assert f"pkb_{token.prefix}_" in html and "shown only once" in html
    assert token.digest not in html
    client.post(f"/account/tokens/{token.pk}/revoke", {"confirm": "yes"})  # the ticked box
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_signup_then_account(client, cpu):
    response = client.post(
        "/accounts/signup/",
        {"username": "newbie", "password1": "a-long-pass-phrase-9", "password2": "a-long-pass-phrase-9"},
    )
    assert response.status_code == 302
    assert "Quota" in client.get("/account/").content.decode()
