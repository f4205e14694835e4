"""The unit lane's guard (tests/lanes.py): with PKB_UNIT_LANE=1 a test that starts a rank worker, the judge, a
gloo world, a server or a compiler fails, even when the code under test swallows the refusal; a test that runs a
plain interpreter passes. And the markers land where tests/lanes.py says."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import lanes

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


@pytest.mark.parametrize(
    ("argv", "marker"),
    [
        ([PY, "-m", "evaluator.rank.worker", "--role", "ref"], "ranks"),
        (["bwrap", "--unshare-all", "--", PY, "-m", "evaluator.rank.worker"], "ranks"),
        ([PY, "-m", "evaluator.process.forkserver", "7"], "ranks"),
        ([PY, "-S", "-m", "evaluator.cli", "eval", "1", "x.py"], "ranks"),
        ([PY, "-m", "evaluator", "host", "--json"], "ranks"),
        ([f"{ROOT}/.venv/bin/pkb", "eval"], "ranks"),
        ([PY, "manage.py", "runserver"], "server"),
        (["/usr/bin/chromium", "--headless"], "server"),
        ([PY, "-m", "pip", "install", "x"], "server"),
        ([PY, "-m", "venv", "/tmp/v"], "server"),
        (["c++", "-O3", "x.cpp"], "build"),
        ("ninja -v", "build"),
        ([PY, "-c", "print(1)"], None),
        (["git", "ls-files"], None),
        ([PY, "-S", "-c", "import pkb_client.cli"], None),
    ],
)
def test_each_kind_of_launch_names_its_marker(argv, marker):
    assert lanes.launch_kind(argv) == marker


def test_the_guard_refuses_a_rank_worker_and_a_gloo_world_and_records_both():
    guard = lanes.Guard()
    guard.install()
    try:
        with pytest.raises(lanes.LaneViolation, match="mark this test `ranks`"):
            subprocess.Popen([PY, "-m", "evaluator.rank.worker", "--help"])
        with pytest.raises(lanes.LaneViolation, match="multiprocessing world"):
            multiprocessing.get_context("fork").Process(target=print).start()
        assert subprocess.run([PY, "-c", "pass"]).returncode == 0  # an interpreter alone is fine
    finally:
        guard.uninstall()
    assert len(guard.take()) == 2 and guard.take() == []
    assert subprocess.Popen.__init__ is lanes.Guard()._popen_init  # uninstalled: the original again


SWALLOWED = textwrap.dedent("""
    import subprocess, sys

    def test_starts_a_worker_and_swallows_the_refusal():
        try:
            subprocess.run([sys.executable, "-m", "evaluator.rank.worker", "--help"], timeout=60)
        except Exception:
            pass

    def test_runs_a_plain_interpreter():
        assert subprocess.run([sys.executable, "-c", "pass"]).returncode == 0
""")


@pytest.mark.parametrize("spread", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_unit_lane_test_that_starts_a_worker_fails_even_if_it_swallows_the_refusal(tmp_path, spread):
    """Also with the lane spread over workers as `make test-fast` runs it: each worker installs the guard."""
    (tmp_path / "test_spawn.py").write_text(SWALLOWED)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {**os.environ, lanes.UNIT_LANE_ENV: "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [
            PY,
            "-m",
            "pytest",
            "-q",
            "-p",
            "tests.conftest",
            "-p",
            "no:django",
            "-p",
            "no:cacheprovider",
            "-c",
            str(tmp_path / "pytest.ini"),
            *spread,
            str(tmp_path),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout, done.stdout
    assert "FAILED test_spawn.py::test_starts_a_worker_and_swallows_the_refusal" in done.stdout
    assert "mark this test `ranks`" in done.stdout


def test_the_markers_follow_paths_node_ids_and_fixtures():
    assert lanes.markers_for_nodeid("tests/redteam/test_escape.py::test_x[2]") == ["ranks"]
    assert lanes.markers_for_nodeid(
        "tests/evaluator/test_hosts.py::test_pkb_host_prints_the_record_and_refuses_a_mismatch"
    ) == ["ranks"]
    assert lanes.markers_for_nodeid("tests/evaluator/test_hosts.py::test_other") == []
    assert lanes.markers_for_nodeid("tests/site/browser/test_plots.py::test_y") == ["server"]
    assert lanes.markers_for_nodeid("tests/evaluator/test_builds.py::test_z") == ["build"]
    assert lanes.markers_for_nodeid("tests/site/security/test_fuzz.py::test_page_forms_never_answer_5xx") == ["slow"]
    assert lanes.markers_for_nodeid("tests/test_names.py::test_a") == []

    class Def:
        def __init__(self, module):
            self.func = type("F", (), {"__module__": module})

    assert lanes.markers_for_fixtures({"live_server": [Def("pytest_django.fixtures")]}) == ["server"]
    assert lanes.markers_for_fixtures({"db": [Def("pytest_django.fixtures")]}) == []
    assert lanes.markers_for_fixtures({"page": [Def("tests.site.browser.conftest")]}) == ["server"]


def test_every_entry_of_the_lists_names_a_file_or_directory_that_exists():
    # A moved test would otherwise lose its marker silently (the guard then catches only the first three kinds).
    for entries in lanes.PATHS.values():
        for entry in entries:
            path = ROOT / entry.split("::")[0]
            assert path.is_dir() if entry.endswith("/") else path.is_file(), entry
