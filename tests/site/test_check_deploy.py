"""`manage.py check --deploy` passes, every warning counted as a failure, with the documented production environment
(deploy/systemd/web.env.example: HSTS, secure cookies, SSL redirect behind the proxy's header); and fails without
its HTTPS settings, so the check is one that can fail."""

from __future__ import annotations

import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "deploy" / "systemd" / "web.env.example"


def documented_env() -> dict[str, str]:
    env = {}
    for line in EXAMPLE.read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key] = value
    # The site's own values: a database and broker URL of the same kind, a real random key.
    env.update(
        DATABASE_URL="postgres://pkb:pw@127.0.0.1:5432/pkb_arena",
        BROKER_URL="amqp://pkb:pw@127.0.0.1:5672/",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        PKB_METRICS_TOKEN=secrets.token_urlsafe(32),
    )
    assert not [k for k, v in env.items() if "<" in v], "a placeholder left unfilled"
    return env


def check_deploy(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    base = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "leaderboard.settings", "PKB_DATA_DIR": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_check_deploy_passes_with_the_documented_environment(tmp_path):
    done = check_deploy(documented_env(), tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


@pytest.mark.parametrize(
    "dropped, warning", [("DJANGO_SECURE_COOKIES", "security.W008"), ("DJANGO_HSTS_PRELOAD", "security.W021")]
)
def test_check_deploy_fails_without_the_https_settings(tmp_path, dropped, warning):
    env = documented_env()
    del env[dropped]
    done = check_deploy(env, tmp_path)
    assert done.returncode != 0 and warning in done.stderr, done.stdout + done.stderr
