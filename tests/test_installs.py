"""Each install works alone, in a fresh virtual environment (no system site-packages, nothing of this checkout's
.venv), and runs its smoke:

- the judge's (torch and ``pip install <repo>`` without extras, as a GPU host installs it) judges problems 63 and 78,
  whose references exchange Python objects (torch's ``all_gather_object`` pickles through numpy): with numpy missing
  from the base dependencies both were ``infra_error`` "Numpy is not available";
- the client's (client/pyproject.toml) runs ``pkb submit`` without torch, numpy or Django installed;
- the site's (torch and ``pip install '<repo>[site]'``) checks, migrates a fresh SQLite database, loads the problems,
  collects its static files and renders the leaderboard and problems pages, with nothing of the test extra.

torch comes from this machine's disk (pip's find-links, /opt/wheels), so an environment builds in well under a
minute; the judge's test takes about two, the site's three to six on a busy 2-core machine (under a minute of CPU: its
extra's packages installed, 87 problems loaded, plotly's 4.8 MB gzipped by collectstatic). They run in the full
suite (``make test``), not ``make test-fast``, on every machine that can build a venv and install that torch, and
fail (not skip) where it cannot."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TORCH = os.environ.get("PKB_TEST_TORCH", "torch==2.13.0")  # the Makefile's pin; GPU hosts bring their own
# What `pip install .` needs of the checkout: the build description and the packages it lists.
SOURCES = ("pyproject.toml", "README.md", "evaluator", "problems", "leaderboard", "pkb_client", "client")
# The site runs from its checkout, as the Dockerfile's WORKDIR: templates/ and static/ beside manage.py (settings'
# BASE_DIR); the install brings its dependencies.
SITE_FILES = ("manage.py", "templates", "static")


# Every pip install here runs with --no-compile: byte-compiling all of torch (and plotly) costs more than the few
# modules the smoke imports compile on their first import; what is installed is the same.
def _run(cmd: list[str], cwd: Path, timeout: float, env: dict) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (
        f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


def _sources(tmp_path: Path, *extra: str) -> Path:
    """A copy of the sources (and ``extra`` files of the checkout), so the build writes nothing into the checkout
    (others' build/ and egg-info)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in SOURCES + extra:
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info")
            )
        else:
            shutil.copy2(ROOT / name, src / name)
    return src


def _venv(tmp_path: Path) -> tuple[Path, dict]:
    venv = tmp_path / "venv"
    # The environment the installed code runs in, not pytest's: no PYTHONPATH or virtualenv of ours leaks in.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path, 120, env)
    return venv, env


def test_the_judge_installed_alone_judges_63_and_78(tmp_path):
    src = _sources(tmp_path)
    venv, env = _venv(tmp_path)
    python, pkb = venv / "bin" / "python", venv / "bin" / "pkb"
    _run([str(python), "-m", "pip", "install", "-q", "--no-compile", TORCH], tmp_path, 600, env)
    _run([str(python), "-m", "pip", "install", "-q", "--no-compile", str(src)], tmp_path, 600, env)
    # Nothing of the site's stack came with it: the base install is the judge's.
    assert (
        _run(
            [str(python), "-c", "import importlib.util as u; print(u.find_spec('django') is None)"], tmp_path, 60, env
        ).stdout.strip()
        == "True"
    )

    out = tmp_path / "selfcheck.json"
    # Run from outside the checkout and its copy, so the installed package is the one imported.
    done = subprocess.run(
        [
            str(pkb),
            "selfcheck",
            "--device",
            "cpu",
            "--world-size",
            "2",
            "--reduced",
            "--problems",
            "63,78",
            "--trials",
            "2",
            "--json",
            str(out),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(out.read_text()) if out.exists() else {}
    rows = {row["id"]: row for row in report.get("rows", [])}
    detail = f"\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert sorted(rows) == [63, 78], detail
    for pid, row in rows.items():
        assert row["ok"] and row["verdict"] == "correct", f"problem {pid}: {row['verdict']}: {row['message']}{detail}"
    assert done.returncode == 0, detail
    installed = _run([str(python), "-c", "import evaluator; print(evaluator.__file__)"], tmp_path, 60, env).stdout
    assert str(venv) in installed, installed


def test_the_client_installed_alone_submits_without_torch(tmp_path):
    """client/pyproject.toml: the site client and the judge's torch-free contract, nothing else: ``pkb submit --help``
    and ``pkb feedback --help`` run, and neither torch, numpy nor Django is even installed."""
    src = _sources(tmp_path)
    venv, env = _venv(tmp_path)
    python = venv / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", "--no-compile", str(src / "client")], tmp_path, 600, env)
    missing = _run(
        [
            str(python),
            "-c",
            "import importlib.util as u; "
            "print([m for m in ('torch', 'numpy', 'django', 'problems', 'leaderboard', 'evaluator.judge') "
            "if u.find_spec(m.split('.')[0]) is None or u.find_spec(m) is None])",
        ],
        tmp_path,
        60,
        env,
    ).stdout
    assert missing.strip() == "['torch', 'numpy', 'django', 'problems', 'leaderboard', 'evaluator.judge']", missing
    for script in ("pkb", "pkb-client"):
        done = _run([str(venv / "bin" / script), "submit", "--help"], tmp_path, 60, env)
        assert "usage: pkb submit" in done.stdout and "--profile" in done.stdout, done.stdout
    assert "pkb feedback" in _run([str(venv / "bin" / "pkb"), "feedback", "--help"], tmp_path, 60, env).stdout
    # The feedback text is the contract's, as on the site's run page.
    text = _run(
        [str(python), "-c", "from evaluator.contract.feedback_text import text; print(text({'verdict': 'correct'}))"],
        tmp_path,
        60,
        env,
    ).stdout
    assert text.startswith("verdict: CORRECT"), text
    refused = subprocess.run(
        [str(venv / "bin" / "pkb"), "eval", "1", "reference", "-W", "1"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "the judge's own install" in refused.stderr, refused.stderr
    installed = _run([str(python), "-c", "import pkb_client; print(pkb_client.__file__)"], tmp_path, 60, env).stdout
    assert str(venv) in installed, installed


# Run by ``manage.py shell -c``: the pages a visitor opens first, through Django's test client (it re-raises a view's
# exception, so a failure shows its traceback). Problem 1's stem is on the problems page once load_problems ran.
_PAGES = """
from django.test import Client
from leaderboard.catalogue import selectors
client = Client()
board = client.get("/")
assert board.status_code == 200, board.status_code
assert selectors.profile_get(None).name in board.content.decode(), "the default profile is not on the leaderboard"
index = client.get("/problems/")
assert index.status_code == 200, index.status_code
assert "1_allreduce" in index.content.decode(), "problem 1 is not on the problems page"
print("pages ok")
"""


def _site_env(env: dict, tmp_path: Path) -> dict:
    """The production settings' defaults (no variable of this test run's leaks in: pytest-django's settings module,
    a database, a broker), with a SQLite database and a data directory of this test's own."""
    env = {
        k: v
        for k, v in env.items()
        if not k.startswith(("DJANGO_", "PKB_")) and k not in ("DATABASE_URL", "BROKER_URL")
    }
    return {
        **env,
        "DJANGO_SETTINGS_MODULE": "leaderboard.settings",
        "PKB_DATA_DIR": str(tmp_path / "data"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'site.sqlite3'}",
    }


def test_the_site_installed_with_its_extra_serves_its_pages(tmp_path):
    src = _sources(tmp_path, *SITE_FILES)
    venv, env = _venv(tmp_path)
    python = venv / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", "--no-compile", TORCH], tmp_path, 600, env)
    _run([str(python), "-m", "pip", "install", "-q", "--no-compile", f"{src}[site]"], tmp_path, 600, env)
    # The site's extra is all it has: nothing of the test extra came with it.
    missing = _run(
        [
            str(python),
            "-c",
            "import importlib.util as u; print([m for m in ('pytest', 'pytest_django') if u.find_spec(m) is None])",
        ],
        tmp_path,
        60,
        env,
    ).stdout
    assert missing.strip() == "['pytest', 'pytest_django']", missing

    site = _site_env(env, tmp_path)
    manage = [str(python), "manage.py"]
    _run(manage + ["check"], src, 120, site)
    _run(manage + ["migrate", "--noinput"], src, 300, site)
    loaded = _run(manage + ["load_problems"], src, 300, site).stdout
    assert "87 created" in loaded, loaded
    # The production storage serves hashed names from a manifest: a page renders only after collectstatic.
    _run(manage + ["collectstatic", "--noinput"], src, 300, site)
    assert "pages ok" in _run(manage + ["shell", "-c", _PAGES], src, 120, site).stdout
    # gunicorn: the production web process's server (deploy/systemd/pkb-web.service) comes with the extra too.
    installed = _run(
        [str(python), "-c", "import django, rest_framework, gunicorn; print(django.__file__)"], tmp_path, 60, env
    ).stdout
    assert str(venv) in installed, installed
