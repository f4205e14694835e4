"""What the browser tests share: the embedded server (``manage.py runserver_with_worker`` on a fresh SQLite database),
headless Chromium (Debian's, driven by Playwright), and the steps several tests take: sign up, zip files for the
upload form, and watch a page for dialogs and Content-Security-Policy violations."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
OUTPUT = ROOT / "test-output"
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def manage(env, *args, **kwargs):
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
        **kwargs,
    )


def site_env(tmp: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    env.update(
        DATABASE_URL=f"sqlite:///{tmp}/site.sqlite3",
        PKB_DATA_DIR=str(tmp),
        DJANGO_SECRET_KEY="browser-test",
        DJANGO_SETTINGS_MODULE="leaderboard.settings",
        PYTHONPATH=str(ROOT),
    )
    return env


@pytest.fixture(scope="session")
def migrated_database(tmp_path_factory) -> Path:
    """A SQLite database migrated and with the 87 problems loaded, made once a test run: each embedded site starts
    from a copy of it (a fresh database of its own, without migrating and loading again)."""
    tmp = tmp_path_factory.mktemp("migrated")
    env = site_env(tmp)
    manage(env, "migrate", "--noinput")
    manage(env, "load_problems")
    return tmp / "site.sqlite3"


@contextlib.contextmanager
def embedded_site(tmp: Path, database: Path, setup: str = ""):
    """``manage.py runserver_with_worker`` on a fresh SQLite database in ``tmp`` (a copy of ``database``, then the
    ``setup`` code run in ``manage.py shell``): yields (url, env), and stops the server after."""
    env = site_env(tmp)
    shutil.copyfile(database, tmp / "site.sqlite3")
    if setup:
        manage(env, "shell", "-c", setup)
    port = free_port()
    log = open(tmp / "server.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "runserver_with_worker", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180  # collectstatic runs first (gzip of plotly.js)
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/healthz", timeout=2)
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("the embedded server did not start:\n" + (tmp / "server.log").read_text())
    try:
        yield url, env
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory, migrated_database):
    setup = (
        "from leaderboard.catalogue.models import HardwareProfile as H; "
        "H.objects.filter(slug='cpu-gloo').update(trials=1)"
    )
    with embedded_site(tmp_path_factory.mktemp("embedded"), migrated_database, setup) as (url, _env):
        yield url


@pytest.fixture
def page():
    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is missing: run scripts/services.sh (installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    OUTPUT.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        yield tab
        browser.close()


PRELUDE = """
import random
from django.contrib.auth import get_user_model
from leaderboard.accounts.services import submitter_for
from leaderboard.catalogue.models import HardwareProfile
from leaderboard.scoring.models import LeaderboardEntry, ProblemScore
from leaderboard.submissions.models import Submission
p = HardwareProfile.objects.get(slug="cpu-gloo")
u, _ = get_user_model().objects.get_or_create(username="plotter")
sub = submitter_for(u)
def make(n, protocol, k=1, name="m"):
    subs = Submission.objects.bulk_create([Submission(submitter=sub, profile=p, model_name=f"{name}-{i}",
        backend="torch", protocol=protocol, attempts_k=k, visibility="public") for i in range(n)])
    return subs
def entries(subs, faster):
    LeaderboardEntry.objects.bulk_create([LeaderboardEntry(submission=s, profile=p, protocol=s.protocol,
        backend="torch", attempts_k=s.attempts_k, listed=True, correct=faster(i) + 1, faster=faster(i))
        for i, s in enumerate(subs)])
def scores(subs, problem, status, speedup=None):
    ProblemScore.objects.bulk_create([ProblemScore(submission=s, problem_id=problem, profile=p,
        protocol=s.protocol, listed=True, status=status, attempt=1, attempts_total=1,
        correct=status == "correct", speedup=speedup(i) if speedup else None,
        speedup_lo=speedup(i) * 0.9 if speedup else None, speedup_hi=speedup(i) * 1.1 if speedup else None)
        for i, s in enumerate(subs)])
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory, migrated_database):
    """The embedded server on a fresh SQLite database, and a way to add rows to it (manage.py shell)."""
    with embedded_site(tmp_path_factory.mktemp("plots"), migrated_database) as (url, env):

        def seed(code: str) -> None:
            manage(env, "shell", "-c", PRELUDE + code)

        yield url, seed


PASSWORD = "a-long-pass-phrase-9"


def sign_up(tab, url: str, username: str) -> None:
    """Create an account through the sign-up page; the browser ends on the account page, logged in."""
    tab.goto(f"{url}/accounts/signup/")
    tab.fill("#id_username", username)
    tab.fill("#id_password1", PASSWORD)
    tab.fill("#id_password2", PASSWORD)
    tab.click("form.stack button")
    tab.wait_for_url(f"{url}/account/")


def zipped(directory: Path, files: dict[str, bytes], name: str = "run.zip") -> Path:
    """``files`` ({path in the archive: bytes}) as a zip archive in ``directory``, for the upload form."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    path = Path(directory) / name
    path.write_bytes(buffer.getvalue())
    return path


def watch(tab) -> dict:
    """What a page does that it should not: the dialogs it opens and the CSP violations Chromium reports."""
    seen = {"dialogs": [], "csp": []}
    tab.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    tab.on("console", lambda m: seen["csp"].append(m.text) if "Content Security Policy" in m.text else None)
    return seen
