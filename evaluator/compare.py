"""The judge's output comparison (structural, then numeric under the problem's tolerance; dtype rules in
docs/dtype.md). It is defined in problems/tolerance.py, beside the problems whose own ``compare`` use it (problems
never import the evaluator; the evaluator may import problems)."""
from __future__ import annotations

from problems.tolerance import CHUNK, DEVICE_CHUNK, Comparison, Mismatch, compare  # noqa: F401
