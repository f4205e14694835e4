"""The site client stands alone (issue 33): ``pkb submit|publish|withdraw|feedback`` import nothing of the judge
(torch, numpy) or the site (Django), whether run through ``pkb`` (evaluator/cli.py dispatches them before anything of
the judge is loaded) or ``pkb-client`` (pkb_client/cli.py). tests/test_installs.py installs it alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "numpy", "django")


def _imported(*args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    names = {
        line.split("|")[-1].strip().split(".")[0]
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return done, names


@pytest.mark.parametrize("entry", ["evaluator.cli", "pkb_client.cli"])
@pytest.mark.parametrize("command", ["submit", "status", "wait", "list", "publish", "withdraw", "delete", "feedback"])
def test_a_client_command_imports_nothing_heavy(entry, command):
    done, names = _imported("-m", entry, command, "--help")
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert f"pkb {command}" in done.stdout
    assert "pkb_client" in names and not set(HEAVY) & names, sorted(set(HEAVY) & names)


def test_importing_the_client_imports_nothing_heavy():
    code = (
        "import sys, pkb_client, pkb_client.cli, pkb_client.submit, pkb_client.manage, pkb_client.feedback; "
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


def test_pkb_client_runs_the_client_commands_only(capsys):
    from pkb_client import cli

    assert cli.main([]) == 2 and "submit" in capsys.readouterr().out
    assert cli.main(["--help"]) == 0
    assert cli.main(["eval", "1", "reference", "-W", "1"]) == 2  # the judge's pkb runs that
    assert "the judge's commands come with the judge's own install" in capsys.readouterr().err
