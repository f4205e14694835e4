"""Shared helpers for the red-team suite: every exploit runs through the real judge, end to end.

CPU (gloo) worlds of 2 ranks with tiny shapes unless the exploit needs more. Each test states the verdict the exploit
must get; the rule for all of them is that an exploit is never ``correct`` *and* faster (it may be correct where the
trick gains nothing, e.g. calling the public reference, or where it is flagged, which never ranks).

Some defences depend on the host: the separate uid needs the judge to run as root with an interpreter that another
user can read; the network namespace needs root. Tests of what only such a layer stops are skipped, saying why,
where it is missing (the result's ``environment.sandbox`` notes say the same).
"""
from __future__ import annotations

import os
import pathlib
import uuid

import pytest

from evaluator import judge, sandbox, schema

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


def notes(result: dict) -> dict:
    return (result.get("environment") or {}).get("sandbox") or {}


def separate_uid(result: dict) -> bool:
    return str(notes(result).get("user", "")).startswith("uid ")


def own_network(result: dict) -> bool:
    return str(notes(result).get("network", "")).startswith("own namespace")


def uid_layer_available() -> bool:
    return os.geteuid() == 0 and sandbox._probe_user_access() is None


def uid_layer_reason() -> str:
    if os.geteuid() != 0:
        return "the judge is not root here, so candidate ranks cannot get their own uid"
    return f"no separate uid for candidates on this host: {sandbox._probe_user_access()}"


requires_uid = pytest.mark.skipif(not uid_layer_available(), reason=uid_layer_reason())
requires_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need a root judge")


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
