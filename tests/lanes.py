"""Which tests start rank processes, the site's programs or compilers (the ``ranks``, ``server`` and ``build``
markers) or sweep many requests (``slow``), and the guard that keeps the unit lane (``make test-fast``: the tests
with none of these markers) free of the first three.

A test gets its markers from three places: a ``pytestmark``/decorator in its own file, a fixture it uses that is
defined in one of ``FIXTURE_HOMES`` (the browser's sites, Django's live server), or a path listed in ``PATHS``. The
lists are not trusted to be complete: with ``PKB_UNIT_LANE=1`` (what ``make test-fast`` sets) every launch of a rank
worker, the judge, its fork server or box, a multiprocessing world, a server, a browser, a compiler or pip from the
test process is refused, and the test that tried fails with the marker it needs. So a test added without its marker
makes the unit lane fail, not silently slow or heavy.

What the guard cannot see: a launch made by a grandchild (a child process the test started, which then starts the
judge). Every child the unit lane starts is an interpreter running a one-line check, and none of those starts more.
"""

from __future__ import annotations

import multiprocessing.process
import os
import socketserver
import subprocess
from typing import Any

MARKERS = ("ranks", "server", "build", "slow")
UNIT_LANE_ENV = "PKB_UNIT_LANE"

# Directories (ending in /), files and single tests (pytest node ids without parameters) whose tests start what the
# marker names, where neither a marker in the file nor a fixture says so.
PATHS: dict[str, tuple[str, ...]] = {
    # The judge end to end, its box, its fork server and warm pool; the gloo worlds of tests/world.py
    # (the problems' own tests and the self-check); the red team; the site's judge-driven tests.
    "ranks": (
        "tests/problems/",
        "tests/redteam/",
        "tests/feedback/",
        "tests/evaluator/compat/",
        "tests/evaluator/test_judge_e2e.py",
        "tests/evaluator/test_forkserver.py",
        "tests/evaluator/test_warm.py",
        "tests/evaluator/test_gloo_compat.py",
        "tests/evaluator/test_cli_hidden.py",
        "tests/evaluator/test_gpu_smoke.py",
        "tests/evaluator/test_peak.py",
        "tests/evaluator/test_nulls.py",
        "tests/site/test_runner.py",
        "tests/site/test_judge_service.py",
        "tests/site/test_worker_pinning.py",
        "tests/site/test_worker_gate.py",
        "tests/site/services/test_fast_p_follows_the_judge.py",
        "tests/evaluator/test_pairs.py",
        "tests/evaluator/test_dtype_rule.py",
        "tests/test_image_files.py",
        "tests/evaluator/test_contract.py::test_each_field_round_trips",
        "tests/evaluator/test_contract.py::test_the_cli_hands_every_request_field_to_the_judge",
        "tests/evaluator/test_contract.py::test_the_eval_command_line_runs_a_request",
        "tests/evaluator/test_hosts.py::test_pkb_host_prints_the_record_and_refuses_a_mismatch",
        "tests/evaluator/test_timing_rules.py::test_pause_stops_a_trusted_group_and_resume_continues_it",
        "tests/site/views/test_guide_pages_and_defects.py::test_the_reference_download_is_a_correct_starting_candidate",
        "tests/site/views/test_guide_pages_and_defects.py::"
        "test_the_exploits_data_is_generated_from_the_red_team_suite_and_up_to_date",
        "tests/test_client_alone.py::test_a_client_command_imports_nothing_heavy",
        "tests/test_client_alone.py::test_pkb_client_runs_the_client_commands_only",
        "tests/site/test_shared_profile.py::test_a_worker_pinned_to_one_gpu_serves_it_and_not_the_eight_gpu_profile",
        "tests/site/services/test_unverified.py::test_an_unverified_result_is_final_never_correct_and_never_refunded",
        "tests/evaluator/test_shared_device_kernels.py",
    ),
    # The site's programs and other servers: a live server, manage.py in a process of its own, the job worker, the
    # brokers, Chromium, a fresh virtual environment's pip.
    "server": (
        "tests/site/browser/",
        "tests/site/integration/",
        "tests/test_installs.py",
        "tests/site/test_client_commands.py",
        "tests/site/test_client.py",
        "tests/site/views/test_guide_pages_and_defects.py::test_the_openapi_schema_generates_with_warnings_as_errors",
        "tests/site/test_check_deploy.py",
    ),
    # A C/C++ compiler: extensions built, cached and restored.
    "build": (
        "tests/evaluator/test_builds.py",
        "tests/evaluator/test_prebuild.py",
        "tests/evaluator/test_cuda_helpers.py",
        "tests/evaluator/test_build_cache_key.py",
        "tests/site/test_build_stage.py",
    ),
    # Sweeps of many requests: every list endpoint and page at two data sizes (their query counts) and the fuzzers
    # (every API operation, page query string and form). Half the unit lane's time before they left it; the guard
    # does not enforce this one.
    "slow": (
        "tests/site/security/test_hostile_input.py::test_list_endpoints_cost_the_same_queries_at_two_sizes",
        "tests/site/views/test_pages.py::test_query_count_is_constant_as_data_grows",
        "tests/site/security/test_fuzz.py::test_no_api_operation_answers_5xx",
        "tests/site/security/test_fuzz.py::test_page_query_strings_never_answer_5xx",
        "tests/site/security/test_fuzz.py::test_page_forms_never_answer_5xx",
        "tests/site/test_backup.py",  # a whole database dumped and restored
    ),
}

# Fixtures whose definition in one of these modules starts a server (the browser tests' sites and tabs, Django's
# live server).
FIXTURE_HOMES: dict[str, str] = {"tests.site.browser.conftest": "server", "pytest_django.fixtures": "server"}
SERVER_FIXTURES = frozenset({"live_server"})

# A launch is refused in the unit lane when an argument of its command line contains one of these words ...
_LAUNCH_WORDS: tuple[tuple[str, str], ...] = (
    ("evaluator.rank.worker", "ranks"),
    ("evaluator.process.forkserver", "ranks"),
    ("evaluator.cli", "ranks"),
    ("evaluator.serve", "ranks"),
    ("box_init", "ranks"),
    ("bwrap", "ranks"),
    ("bin/pkb", "ranks"),
    ("manage.py", "server"),
    ("runserver", "server"),
    ("dramatiq", "server"),
    ("chromium", "server"),
    ("playwright", "server"),
    ("rabbitmq", "server"),
    ("redis-server", "server"),
    ("gunicorn", "server"),
)
# ... or its program (by base name) is one of these, or it is ``python -m`` one of these modules.
_PROGRAMS = {
    "cc": "build",
    "c++": "build",
    "g++": "build",
    "gcc": "build",
    "clang": "build",
    "clang++": "build",
    "ninja": "build",
    "nvcc": "build",
    "make": "build",
    "pip": "server",
    "pip3": "server",
}
_MODULES = {"evaluator": "ranks", "pip": "server", "venv": "server", "ensurepip": "server"}


class LaneViolation(RuntimeError):
    """A unit-lane test tried to start what only a marked test may start."""


def markers_for_nodeid(nodeid: str) -> list[str]:
    """The markers PATHS gives a test, by its node id (``tests/test_names.py::test_a[param]``)."""

    def names(entry: str) -> bool:
        if entry.endswith("/"):
            return nodeid.startswith(entry)
        return nodeid == entry or nodeid.startswith((entry + "::", entry + "["))

    return [marker for marker, entries in PATHS.items() if any(names(entry) for entry in entries)]


def markers_for_fixtures(fixturedefs: dict[str, Any]) -> list[str]:
    found = []
    for name, defs in fixturedefs.items():
        for fixturedef in defs:
            home = getattr(getattr(fixturedef, "func", None), "__module__", "")
            marker = FIXTURE_HOMES.get(home)
            if marker and (home != "pytest_django.fixtures" or name in SERVER_FIXTURES):
                found.append(marker)
    return found


def launch_kind(argv: Any) -> str | None:
    """The marker a command line needs, or None for a command the unit lane may run."""
    if isinstance(argv, (str, bytes, os.PathLike)):
        argv = os.fsdecode(argv).split()
    words = [os.fsdecode(w) if isinstance(w, (bytes, os.PathLike)) else str(w) for w in argv]
    for word in words:
        for needle, marker in _LAUNCH_WORDS:
            if needle in word:
                return marker
    if not words:
        return None
    program = os.path.basename(words[0])
    if program in _PROGRAMS:
        return _PROGRAMS[program]
    if program.startswith("python") and "-m" in words[:-1]:
        return _MODULES.get(words[words.index("-m") + 1])
    return None


class Guard:
    """Refuses, and records, every launch a marked test would make (installed only in the unit lane)."""

    def __init__(self) -> None:
        self.violations: list[str] = []
        self._popen_init = subprocess.Popen.__init__
        self._process_start = multiprocessing.process.BaseProcess.start
        self._serve_forever = socketserver.BaseServer.serve_forever

    def refuse(self, marker: str, what: str) -> None:
        message = f"the unit lane starts no {what}: mark this test `{marker}` (tests/lanes.py PATHS or pytestmark)"
        self.violations.append(message)
        raise LaneViolation(message)

    def install(self) -> None:
        guard = self
        popen_init, process_start, serve_forever = self._popen_init, self._process_start, self._serve_forever

        def checked_popen(popen_self, args, *rest, **kwargs):
            marker = launch_kind(args)
            if marker:
                shown = args if isinstance(args, str) else " ".join(map(str, args))
                guard.refuse(marker, f"process like `{shown[:160]}`")
            return popen_init(popen_self, args, *rest, **kwargs)

        def checked_start(process_self):
            guard.refuse("ranks", f"multiprocessing world ({process_self.name})")
            return process_start(process_self)

        def checked_serve(server_self, *args, **kwargs):
            guard.refuse("server", f"server ({type(server_self).__name__})")
            return serve_forever(server_self, *args, **kwargs)

        subprocess.Popen.__init__ = checked_popen  # type: ignore[method-assign]
        multiprocessing.process.BaseProcess.start = checked_start  # type: ignore[method-assign]
        socketserver.BaseServer.serve_forever = checked_serve  # type: ignore[method-assign]

    def uninstall(self) -> None:
        subprocess.Popen.__init__ = self._popen_init  # type: ignore[method-assign]
        multiprocessing.process.BaseProcess.start = self._process_start  # type: ignore[method-assign]
        socketserver.BaseServer.serve_forever = self._serve_forever  # type: ignore[method-assign]

    def take(self) -> list[str]:
        taken, self.violations = self.violations, []
        return taken
