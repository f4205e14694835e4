"""Shared assertions for the problem tests: the judge's own comparison with the problem's tolerances."""

from __future__ import annotations

from typing import Any

import problems
from problems.tolerance import compare


def assert_close(problem_id: int, expected: Any, actual: Any, world_size: int, what: str = "") -> None:
    """Fail unless ``actual`` matches ``expected`` under the problem's own tolerance rules."""
    problem = problems.get(problem_id)
    if problem.compare is not None:
        message = problem.compare(expected, actual, world_size)
        assert message is None, f"{what}: {message}"
        return
    slack = (lambda t: problem.slack(t, world_size)) if problem.slack else None
    result = compare(expected, actual, problem.atol, problem.rtol, slack)
    assert result.ok, f"{what}: {result.mismatch.path}: {result.mismatch.message}"


def assert_differs(problem_id: int, expected: Any, actual: Any, world_size: int, what: str = "") -> None:
    """Fail if a wrong answer (zeros, no communication...) would pass the problem's check."""
    problem = problems.get(problem_id)
    if problem.compare is not None:
        assert problem.compare(expected, actual, world_size) is not None, f"{what} passed the check"
        return
    slack = (lambda t: problem.slack(t, world_size)) if problem.slack else None
    assert not compare(expected, actual, problem.atol, problem.rtol, slack).ok, f"{what} passed the check"
