"""The log-in lock-out cannot lock everyone out (issue 45, item 7): behind the deployed proxy each client is counted
at its own address, a production web process does not start until the proxy count is stated, and API tokens are
never held back by someone else's wrong passwords. The production threshold is pinned here as a literal (10 failures,
15 minutes), never read back from settings, so a changed default fails a test."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from leaderboard.accounts import throttle

ROOT = Path(__file__).resolve().parents[3]
WEB_UNIT = ROOT / "deploy" / "systemd" / "pkb-web.service"
NGINX = "127.0.0.1"  # the deployed web unit listens on loopback only: every request's peer is nginx
CLIENT_X, CLIENT_Y = "198.51.100.7", "198.51.100.8"


def _unit_proxies() -> int:
    """PKB_TRUSTED_PROXIES as the deployed web unit sets it."""
    text = WEB_UNIT.read_text()
    assert re.search(r"^ExecStart=.* -b 127\.0\.0\.1:\d+\s*$", text, re.M), "the web unit no longer binds to loopback"
    values = re.findall(r"^Environment=.*\bPKB_TRUSTED_PROXIES=(\d+)", text, re.M)
    assert len(values) == 1, "the web unit must state PKB_TRUSTED_PROXIES once"
    return int(values[0])


@pytest.fixture
def behind_nginx(settings):
    """The site as the deployed web unit runs it: behind nginx, with the unit's proxy count."""
    settings.PKB_TRUSTED_PROXIES = _unit_proxies()
    return settings


def _login(client, password, forwarded, username="alice"):
    # nginx appends the address it saw to whatever X-Forwarded-For the client sent.
    return client.post(
        "/accounts/login/",
        {"username": username, "password": password},
        REMOTE_ADDR=NGINX,
        HTTP_X_FORWARDED_FOR=forwarded,
    )


def _lock_out(client, forwarded):
    answers = [_login(client, f"wrong-{n}", forwarded).status_code for n in range(10)]
    assert answers == [200] * 9 + [429], answers


def test_the_deployed_web_unit_believes_exactly_one_proxy():
    assert _unit_proxies() == 1


def test_the_production_threshold_is_ten_failures_and_fifteen_minutes(client, owner):
    # Nine wrong passwords leave the right one working (and a success clears the count)...
    for n in range(9):
        assert client.post("/accounts/login/", {"username": "alice", "password": f"wrong-{n}"}).status_code == 200
    assert client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"}).status_code == 302
    # ...and from zero again, the tenth locks the address out for fifteen minutes.
    client.logout()
    for n in range(10):
        response = client.post("/accounts/login/", {"username": "alice", "password": f"wrong-{n}"})
        assert response.status_code == (200 if n < 9 else 429), n
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    assert response.status_code == 429 and "_auth_user_id" not in client.session
    assert 14 * 60 < int(response["Retry-After"]) <= 15 * 60 + 1


def test_ten_wrong_passwords_from_one_client_behind_nginx_do_not_lock_out_another(client, owner, behind_nginx):
    _lock_out(client, CLIENT_X)
    assert _login(client, "pw-alice", CLIENT_X).status_code == 429
    # X cannot step out of its lock-out by writing an address of its own: nginx's is the one read.
    assert _login(client, "pw-alice", f"203.0.113.1, {CLIENT_X}").status_code == 429
    # Y, through the same nginx, logs in.
    response = _login(client, "pw-alice", CLIENT_Y)
    assert response.status_code == 302 and client.session.get("_auth_user_id") == str(owner.pk)


def test_with_no_proxy_believed_nginx_s_one_address_would_lock_everyone_out(client, owner, settings):
    # Why a production web process must state the count: at 0 behind nginx, X's failures are Y's too.
    settings.PKB_TRUSTED_PROXIES = 0
    _lock_out(client, CLIENT_X)
    assert _login(client, "pw-alice", CLIENT_Y).status_code == 429


def _me(client, token, forwarded):
    return client.get(
        "/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {token}", REMOTE_ADDR=NGINX, HTTP_X_FORWARDED_FOR=forwarded
    )


def _token(owner):
    from leaderboard.accounts import services as accounts_services

    return accounts_services.token_create(owner.submitter, "cli", ["read", "submit"], 30)[1]


def test_a_valid_token_from_a_locked_out_address_still_works(client, owner, behind_nginx):
    secret = _token(owner)
    _lock_out(client, CLIENT_X)
    response = _me(client, secret, CLIENT_X)
    assert response.status_code == 200 and response.json()["username"] == "alice"
    # A wrong token from that address is refused as a wrong token (its own count), not as the password lock-out.
    assert _me(client, "pkb_guess_xxxxxxxx", CLIENT_X).status_code == 401


def test_one_client_s_wrong_tokens_hold_back_that_client_only(client, owner, behind_nginx):
    secret = _token(owner)
    for n in range(30):  # PKB_TOKEN_FAILURE_LIMIT's production value
        assert _me(client, f"pkb_guess{n}_xxxxxxxx", CLIENT_X).status_code == 401, n
    assert _me(client, secret, CLIENT_X).status_code == 429
    assert _me(client, secret, CLIENT_Y).status_code == 200


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")  # only its ENGINE is read, and no query is made
def test_the_start_up_check_refuses_an_unstated_proxy_count_in_production_only(settings):
    from django.core.exceptions import ImproperlyConfigured

    settings.DATABASES = {"default": {**settings.DATABASES["default"], "ENGINE": "django.db.backends.postgresql"}}
    settings.PKB_TRUSTED_PROXIES_STATED = False
    with pytest.raises(ImproperlyConfigured, match="PKB_TRUSTED_PROXIES is not set"):
        throttle.require_stated_proxies()
    settings.PKB_TRUSTED_PROXIES_STATED = True  # 0 stated is a choice too: clients connect directly
    throttle.require_stated_proxies()
    settings.PKB_TRUSTED_PROXIES_STATED = False
    settings.DATABASES = {"default": {**settings.DATABASES["default"], "ENGINE": "django.db.backends.sqlite3"}}
    throttle.require_stated_proxies()  # the embedded site (make serve) is reached directly


def _start_web(**extra) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "PKB_")) and k not in ("DATABASE_URL", "BROKER_URL")
    }
    env.update(
        DJANGO_SETTINGS_MODULE="leaderboard.settings",
        DJANGO_SECRET_KEY="lockout-test",
        DATABASE_URL="postgres://pkb@127.0.0.1:5432/pkb_arena",
        **extra,
    )
    return subprocess.run(
        [sys.executable, "-c", "import leaderboard.wsgi"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_production_web_process_does_not_start_until_the_proxy_count_is_stated():
    refused = _start_web()
    assert refused.returncode != 0 and "PKB_TRUSTED_PROXIES is not set" in refused.stderr
    started = _start_web(PKB_TRUSTED_PROXIES="1")
    assert started.returncode == 0, started.stderr[-2000:]


def test_a_forwarded_request_from_a_local_peer_with_no_proxy_believed_is_reported_once(
    settings, caplog, monkeypatch, rf
):
    settings.PKB_TRUSTED_PROXIES = 0
    monkeypatch.setattr(throttle, "_unbelieved_proxy_reported", False)
    direct = rf.get("/", REMOTE_ADDR="8.8.4.4", HTTP_X_FORWARDED_FOR="1.2.3.4")  # a client's own header: no sign
    forwarded = rf.get("/", REMOTE_ADDR=NGINX, HTTP_X_FORWARDED_FOR=CLIENT_X)
    with caplog.at_level("ERROR", logger="leaderboard.accounts.throttle"):
        assert throttle.client_ip(direct) == "8.8.4.4"
        assert not caplog.records
        assert throttle.client_ip(forwarded) == NGINX and throttle.client_ip(forwarded) == NGINX
    assert len(caplog.records) == 1 and "PKB_TRUSTED_PROXIES=0" in caplog.records[0].getMessage()
