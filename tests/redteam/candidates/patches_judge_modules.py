"""Exploit (monkeypatching the judge's own modules): replace the comparison (problems/tolerance.py's ``compare``, and
the output check's own name for it in evaluator/rank/outputs.py), the reference solution, torch.allclose and
assert_close with versions that always agree, then return zeros. None of it matters: the check and the reference run
in the reference's ranks, trusted processes of their own.

In a process of its own the patch does fool the check (the control in tests/redteam/test_timing_tricks.py), so the
``incorrect`` verdict is the process boundary's doing."""
import torch

import problems
import problems.p01_allreduce
import problems.tolerance


def _agree(*args, **kwargs):
    return problems.tolerance.Comparison(ok=True)


problems.tolerance.compare = _agree
problems.get(1).solution = lambda tensor: torch.zeros_like(tensor)
problems.p01_allreduce.solution = lambda tensor: torch.zeros_like(tensor)
torch.allclose = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
try:  # the binding the output check uses (``from problems.tolerance import compare``), taken before this ran
    import evaluator.rank.outputs
    evaluator.rank.outputs.compare = _agree
except Exception:  # noqa: BLE001
    pass


def solution(tensor):
    return torch.zeros_like(tensor)
