"""Nothing of the judge imports this: its comparison is problems/tolerance.py's ``compare`` (evaluator/rank/outputs.py
takes it from there). The re-export stays only while the red-team candidate
tests/redteam/candidates/patches_judge_modules.py patches ``evaluator.compare`` (a candidate that cannot import it is a
compile_error, not the incorrect verdict that test asks for); delete this file once that candidate patches
``problems.tolerance`` instead."""
from __future__ import annotations

from problems.tolerance import CHUNK, DEVICE_CHUNK, Comparison, Mismatch, compare  # noqa: F401
