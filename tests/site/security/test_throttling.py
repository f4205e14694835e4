"""Throttling of the login form, sign-up and API tokens (docs/site.md, Throttling), with the production settings:
leaderboard/settings_test.py leaves every value below as leaderboard/settings.py sets it."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model

THROTTLE_SETTINGS = (
    "AXES_FAILURE_LIMIT",
    "AXES_COOLOFF_TIME",
    "AXES_LOCKOUT_PARAMETERS",
    "AXES_RESET_ON_SUCCESS",
    "AXES_LOCKOUT_CALLABLE",
    "AXES_CLIENT_IP_CALLABLE",
    "AUTHENTICATION_BACKENDS",
    "PKB_SIGNUP_LIMIT",
    "PKB_SIGNUP_WINDOW_MINUTES",
    "PKB_TOKEN_FAILURE_LIMIT",
    "PKB_TOKEN_WINDOW_MINUTES",
    "PKB_TRUSTED_PROXIES",
)


def test_the_tests_run_with_the_production_throttle_settings():
    import leaderboard.settings as production

    for name in THROTTLE_SETTINGS:
        assert getattr(settings, name) == getattr(production, name), name
    assert "axes" in settings.INSTALLED_APPS and settings.MIDDLEWARE[-1] == "axes.middleware.AxesMiddleware"
    assert getattr(settings, "AXES_ENABLED", True) is True


def _login(client, username, password, **extra):
    return client.post("/accounts/login/", {"username": username, "password": password}, **extra)


def test_wrong_passwords_then_the_right_one_is_refused_while_locked_out(client, owner):
    limit = settings.AXES_FAILURE_LIMIT
    for attempt in range(limit):
        response = _login(client, "alice", f"wrong-{attempt}")
        assert response.status_code == (200 if attempt < limit - 1 else 429), attempt
    # Locked out: the right password does not log in, and the answer says until when.
    response = _login(client, "alice", "pw-alice")
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session
    body = response.content.decode()
    assert "Too many failed log-ins" in body and "Try again after" in body and " UTC" in body
    assert int(response["Retry-After"]) > (settings.AXES_COOLOFF_TIME - timedelta(minutes=1)).total_seconds()
    # Another address is not held back by this one's failures.
    assert _login(client, "alice", "pw-alice", REMOTE_ADDR="10.1.2.3").status_code == 302


def test_after_the_cool_off_the_right_password_logs_in(client, owner):
    from axes.models import AccessAttempt
    from django.utils import timezone

    for attempt in range(settings.AXES_FAILURE_LIMIT):
        _login(client, "alice", f"wrong-{attempt}")
    assert _login(client, "alice", "pw-alice").status_code == 429
    # The cool-off counts from the last failure; move it into the past rather than sleep 15 minutes.
    AccessAttempt.objects.update(attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1))
    response = _login(client, "alice", "pw-alice")
    assert response.status_code == 302 and client.session.get("_auth_user_id") == str(owner.pk)


def test_spraying_one_password_over_many_usernames_is_locked_out_too(client, owner):
    for n in range(settings.AXES_FAILURE_LIMIT):
        _login(client, f"user{n}", "Summer2024!")
    assert _login(client, "alice", "pw-alice").status_code == 429


def test_a_lockout_answers_json_to_json_clients(client, owner):
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        _login(client, "alice", f"wrong-{attempt}")
    response = _login(client, "alice", "pw-alice", HTTP_ACCEPT="application/json")
    assert response.status_code == 429 and response["Content-Type"].startswith("application/json")
    data = response.json()
    assert "Try again after" in data["detail"] and data["retry_after"] > 0 and data["retry_at"]


def test_the_admin_login_is_covered_by_the_same_lockout(client, staff):
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        client.post("/admin/login/", {"username": "sam", "password": f"wrong-{attempt}"})
    response = client.post("/admin/login/", {"username": "sam", "password": "pw-sam"})
    assert response.status_code == 429 and "_auth_user_id" not in client.session


def _signup(client, n, **extra):
    return client.post(
        "/accounts/signup/",
        {"username": f"flood{n}", "password1": "a-Long-pass-phrase-9", "password2": "a-Long-pass-phrase-9"},
        **extra,
    )


def test_a_sign_up_flood_is_refused(client, db):
    User = get_user_model()
    limit = settings.PKB_SIGNUP_LIMIT
    for n in range(limit):
        client.logout()
        assert _signup(client, n).status_code == 302, n
    client.logout()
    response = _signup(client, limit)
    assert response.status_code == 429 and "Too many sign-ups" in response.content.decode()
    assert response["Retry-After"]
    assert User.objects.filter(username__startswith="flood").count() == limit
    # Behind no trusted proxy, a forged X-Forwarded-For does not buy a fresh allowance.
    assert _signup(client, limit + 1, HTTP_X_FORWARDED_FOR="203.0.113.9").status_code == 429


def test_refused_sign_up_forms_count_too(client, db):
    for n in range(settings.PKB_SIGNUP_LIMIT):
        client.post("/accounts/signup/", {"username": f"x{n}", "password1": "a", "password2": "b"})
    assert _signup(client, 99).status_code == 429


def test_a_trusted_proxy_s_forwarded_address_is_the_one_counted(client, db, settings):
    settings.PKB_TRUSTED_PROXIES = 1  # nginx in front: its X-Forwarded-For names the client
    for n in range(settings.PKB_SIGNUP_LIMIT):
        client.logout()
        _signup(client, n, HTTP_X_FORWARDED_FOR="198.51.100.7")
    client.logout()
    assert _signup(client, 50, HTTP_X_FORWARDED_FOR="198.51.100.7").status_code == 429
    # The same proxy forwarding another client: its own allowance.
    assert _signup(client, 51, HTTP_X_FORWARDED_FOR="198.51.100.8").status_code == 302


def test_refused_api_tokens_are_throttled_and_then_even_a_good_token_waits(client, owner):
    from leaderboard.accounts import services as accounts_services

    _, secret = accounts_services.token_create(owner.submitter, "cli", ["read", "submit"], 30)
    for n in range(settings.PKB_TOKEN_FAILURE_LIMIT):
        response = client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer pkb_guess{n}_xxxxxxxx")
        assert response.status_code == 401, n
    response = client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert response.status_code == 429
    assert "Try again after" in response.json()["detail"] and int(response["Retry-After"]) > 0
