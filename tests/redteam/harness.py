"""Shared helpers for the red-team suite: every exploit runs through the real judge, end to end.

CPU (gloo) worlds of 2 ranks with tiny shapes unless the exploit needs more. Each test states the verdict the exploit
must get; the rule for all of them is that an exploit is never ``correct`` *and* faster (it may be correct where the
trick gains nothing, e.g. calling the public reference, or where it is flagged, which never ranks).

The sandbox's layers (own uid, own network and IPC namespaces, a private filesystem view) need a root judge and
bubblewrap, which `make test` installs; CI runs as root, so every escape test runs there for real. As a non-root
user (a developer's laptop) the tests of what only the sandbox stops are skipped, saying why.
"""

from __future__ import annotations

import os
import pathlib
import uuid

import pytest

from evaluator import judge
from evaluator.contract import schema
from evaluator.process import sandbox

HERE = pathlib.Path(__file__).parent
CANDIDATES = HERE / "candidates"
# Tiny and quick: 2 trials, no timing. Timing exploits use TIMED (4 blocks on CPU).
SMALL = dict(M=64, N=32, trials=2, seed=7, timing=False, timeout_s=40)
TIMED = dict(SMALL, timing=True, timing_budget_ms=200)


def run(candidate, problem=1, W: int = 2, **options) -> dict:
    path = candidate if os.path.sep in str(candidate) else str(CANDIDATES / f"{candidate}.py")
    return judge.evaluate(problem, str(path), W, "cpu", **{**SMALL, **options})


def logs(result: dict) -> str:
    return "\n".join((entry.get("stdout") or "") + (entry.get("stderr") or "") for entry in result.get("logs", []))


def probe_lines(text: str) -> dict:
    """What a probing candidate printed, one ``probe NAME: WHAT`` line per attempt, as {NAME: WHAT}."""
    found = {}
    for line in text.splitlines():
        if line.startswith("probe ") and ": " in line:
            name, what = line[len("probe ") :].split(": ", 1)
            found[name] = what
    return found


def notes(result: dict) -> dict:
    return (result.get("environment") or {}).get("sandbox") or {}


def separate_uid(result: dict) -> bool:
    return str(notes(result).get("user", "")).startswith("uid ")


def own_network(result: dict) -> bool:
    return str(notes(result).get("network", "")).startswith("own namespace")


def sandbox_reason() -> str | None:
    """None where candidates get the complete sandbox here; else why not."""
    if os.geteuid() != 0:
        return "the judge is not root here, so candidates cannot get their own uid, namespaces or filesystem view"
    support = sandbox.host_support()
    return None if support["complete"] else support["summary"]


# As root (CI), a host that cannot sandbox fails these tests rather than skipping them (test_sandbox_is_complete).
requires_root = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs a root judge")


def assert_never_correct_and_faster(result: dict) -> None:
    timing = result.get("timing") or {}
    assert not (result["verdict"] == schema.CORRECT and timing.get("faster")), result["message"]
    if result.get("flags"):
        assert timing.get("faster") is False and timing.get("ranked") is False


def from_template(tmp_path: pathlib.Path, name: str, **values: str) -> str:
    """Copy candidates/NAME.py into tmp_path with each "__KEY__" placeholder replaced by its value."""
    text = (CANDIDATES / f"{name}.py").read_text()
    for key, value in values.items():
        placeholder = f'"__{key}__"'
        assert placeholder in text, f"{name}.py has no placeholder {placeholder}"
        text = text.replace(placeholder, repr(str(value)))
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    path.chmod(0o644)
    return str(path)


def token() -> str:
    return uuid.uuid4().hex[:12]


def processes_with(marker: str) -> list[int]:
    """Live process ids whose command line contains ``marker``."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(pid))
            except OSError:
                pass
    return found
