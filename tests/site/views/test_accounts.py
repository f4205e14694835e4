"""Accounts: change a password, reset a forgotten one (the e-mail through the configured backend), close one's account
(what happens to published results), revoke a token only once confirmed, the token's copy button, a next step after
sign-up."""

import re

import pytest
from django.core import mail

from leaderboard.accounts import services as accounts_services
from leaderboard.accounts.models import ApiToken
from leaderboard.submissions import services as submissions_services
from leaderboard.submissions.models import Submission
from tests.site.conftest import GOOD_1

pytestmark = pytest.mark.django_db


def upload(owner, extra=b""):
    return submissions_services.submission_create(
        owner.submitter,
        {"model": "m", "protocol": "one_shot", "attempts": 1, "profile": "cpu-gloo"},
        [("1_allreduce_torch.py", GOOD_1 + extra)],
    )


def test_change_password(owner, client):
    client.force_login(owner)
    assert "Change your password" in client.get("/account/").content.decode()
    response = client.post(
        "/accounts/password/change/",
        {"old_password": "pw-alice", "new_password1": "n3w-Secret-pw", "new_password2": "n3w-Secret-pw"},
    )
    assert response.status_code == 302 and response["Location"] == "/accounts/password/change/done/"
    owner.refresh_from_db()
    assert owner.check_password("n3w-Secret-pw")


def test_reset_a_forgotten_password_by_mail(owner, client, settings):
    owner.email = "alice@example.org"
    owner.save()
    assert "password/reset" in client.get("/accounts/login/").content.decode()
    response = client.post("/accounts/password/reset/", {"email": "alice@example.org"})
    assert response.status_code == 302 and len(mail.outbox) == 1
    link = re.search(r"https?://[^/\s]+(/accounts/password/reset/\S+/)", mail.outbox[0].body).group(1)
    form = client.get(link, follow=True)
    assert "Choose a new password" in form.content.decode()
    done = client.post(form.redirect_chain[-1][0], {"new_password1": "n3w-Secret-pw", "new_password2": "n3w-Secret-pw"})
    assert done.status_code == 302
    owner.refresh_from_db()
    assert owner.check_password("n3w-Secret-pw")
    assert client.get(link, follow=True).content.decode().count("not valid") == 1  # used once


def test_mail_goes_to_the_console_unless_configured():
    from leaderboard import settings as site_settings

    assert site_settings.EMAIL_BACKEND == "django.core.mail.backends.console.EmailBackend"


def test_close_account_deletes_unpublished_and_keeps_published(owner, cpu, client):
    private, public = upload(owner), upload(owner, b"\n# second\n")
    submissions_services.submission_publish(public, owner)
    token = accounts_services.token_create(owner.submitter, "cli", ["read", "submit"])[0]
    client.force_login(owner)
    page = client.get("/account/delete").content.decode()
    assert "stay as they are, credited to “deleted account”" in page
    # Refused while an evaluation is queued, and without the password.
    refused = client.post("/account/delete", {"confirm": "yes", "password": "pw-alice"})
    assert refused.status_code == 400 and "queued or running" in refused.content.decode()
    for sub in (private, public):
        sub.jobs.update(status="done")
    assert client.post("/account/delete", {"confirm": "yes", "password": "wrong"}).status_code == 400
    assert Submission.objects.count() == 2
    done = client.post("/account/delete", {"confirm": "yes", "password": "pw-alice"})
    assert done.status_code == 302
    assert list(Submission.objects.values_list("pk", flat=True)) == [public.pk]
    public.refresh_from_db()
    assert public.visibility == "public" and public.submitter.name == "deleted account"
    owner.refresh_from_db()
    assert not owner.is_active and not owner.has_usable_password() and owner.username != "alice"
    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None
    assert "deleted account" in client.get(f"/submissions/{public.pk}/").content.decode()
    login = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    assert login.status_code == 200 and "Wrong username or password" in login.content.decode()


def test_token_revoke_asks_first_and_new_token_has_a_copy_button(owner, cpu, client):
    client.force_login(owner)
    created = client.post("/account/", {"name": "cli", "scopes": ["read", "submit"], "days": 30}).content.decode()
    assert 'data-copy="new-token"' in created and "PKB_TOKEN" in created
    token = ApiToken.objects.get()
    unconfirmed = client.post(f"/account/tokens/{token.pk}/revoke", follow=True)
    assert "not revoked" in unconfirmed.content.decode()
    token.refresh_from_db()
    assert token.revoked_at is None
    client.post(f"/account/tokens/{token.pk}/revoke", {"confirm": "yes"})
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_sign_up_shows_the_next_steps(client, cpu, settings):
    settings.PKB_OPEN_SIGNUP = True
    response = client.post(
        "/accounts/signup/",
        {
            "username": "newlab",
            "email": "lab@example.org",
            "password1": "a-Long-pass-123",
            "password2": "a-Long-pass-123",
        },
        follow=True,
    )
    page = response.content.decode()
    assert response.redirect_chain[-1][0] == "/account/" and "Next steps" in page and "pkb submit DIR" in page
