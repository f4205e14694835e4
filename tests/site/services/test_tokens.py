"""API tokens: shown once, stored hashed, scoped, expiring, revocable."""

from datetime import timedelta

import pytest
from django.utils import timezone

from leaderboard.accounts import services as accounts_services
from leaderboard.accounts.models import ApiToken


def test_token_is_stored_hashed(owner):
    token, raw = accounts_services.token_create(owner.submitter, "ci", ["read"], days=1)
    assert raw.startswith(f"pkb_{token.prefix}_") and raw not in token.digest
    assert ApiToken.objects.get(pk=token.pk).digest == ApiToken.hash(raw)
    assert accounts_services.token_authenticate(raw).pk == token.pk


def test_wrong_expired_and_revoked_tokens_fail(owner):
    token, raw = accounts_services.token_create(owner.submitter, "ci", ["read", "submit"])
    assert accounts_services.token_authenticate(raw[:-1] + ("x" if raw[-1] != "x" else "y")) is None
    assert accounts_services.token_authenticate("garbage") is None
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert accounts_services.token_authenticate(raw) is None
    token2, raw2 = accounts_services.token_create(owner.submitter, "ci2", ["read"])
    accounts_services.token_revoke(token2)
    assert accounts_services.token_authenticate(raw2) is None


def test_inactive_user_token_fails(owner):
    _, raw = accounts_services.token_create(owner.submitter, "ci", ["read"])
    owner.is_active = False
    owner.save()
    assert accounts_services.token_authenticate(raw) is None


def test_scopes_and_lifetime_are_checked(owner):
    with pytest.raises(ValueError):
        accounts_services.token_create(owner.submitter, "x", ["admin"])
    with pytest.raises(ValueError):
        accounts_services.token_create(owner.submitter, "x", [])
    with pytest.raises(ValueError):
        accounts_services.token_create(owner.submitter, "x", ["read"], days=1000)
