"""Exploit (monkeypatching the judge's own modules): replace the comparison, the reference solution, torch.allclose
and assert_close with versions that always agree, then return zeros. None of it matters: comparison happens in the
judge's process, the reference runs in its own processes."""
import torch

import evaluator.compare
import problems
import problems.p01_allreduce

evaluator.compare.compare = lambda *a, **k: evaluator.compare.Comparison(ok=True)
problems.get(1).solution = lambda tensor: torch.zeros_like(tensor)
problems.p01_allreduce.solution = lambda tensor: torch.zeros_like(tensor)
torch.allclose = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
try:
    import evaluator.judge
    evaluator.judge.compare = evaluator.compare.compare
except Exception:  # noqa: BLE001
    pass


def solution(tensor):
    return torch.zeros_like(tensor)
