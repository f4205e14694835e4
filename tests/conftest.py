"""What every test shares: how the whole suite spreads over processes (scripts/test.sh).

Tests are independent of one another by design (each takes its own box id, scratch directory, database and queue
names), so `scripts/test.sh` runs them side by side with pytest-xdist: most of a judge test's wall time is process
start-up, imports and rank hand-offs rather than arithmetic, and spreads over a 2-core machine. Tests that load the
whole machine on purpose (judges released together, fork storms, helpers timed against the reference) are marked
``alone`` here, by file, and run after the others with nothing beside them: what they prove is that the sandbox
holds under their own load, which another test's load beside them would only blur (a view probe of eight judges at
once on two busy cores outlasts its timeout and the run falls back, by design, to no view).
"""
from __future__ import annotations

import pytest

ALONE = {  # files (relative to tests/) whose tests run alone
    "redteam/test_box.py",
}


def pytest_configure(config):
    config.addinivalue_line("markers", "alone: loads the machine on purpose; scripts/test.sh runs it with nothing "
                                       "beside it")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.split("::", 1)[0].removeprefix("tests/") in ALONE:
            item.add_marker(pytest.mark.alone)
