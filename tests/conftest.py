"""The suite's lanes (tests/lanes.py): every collected test gets the ``ranks``, ``server``, ``build`` or ``slow``
marker that its path or fixtures call for, and with PKB_UNIT_LANE=1 (``make test-fast``) a test that starts a rank
process, the site's programs or a compiler fails."""

from __future__ import annotations

import os

import pytest

from tests import lanes

_guard = lanes.Guard()


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(lanes.UNIT_LANE_ENV) == "1":
        _guard.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    _guard.uninstall()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        fixturedefs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        for marker in {*lanes.markers_for_nodeid(item.nodeid), *lanes.markers_for_fixtures(fixturedefs)}:
            item.add_marker(marker)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    violations = _guard.take()
    if violations:
        report = outcome.get_result()
        report.outcome = "failed"
        report.longrepr = "\n".join(dict.fromkeys(violations))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # A launch outside any test (at collection or import) fails the lane too.
    if _guard.take():
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
