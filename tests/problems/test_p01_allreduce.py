import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_matches_global_sum(W):
    runs = run_reference(1, W, M=64, N=32, seed=7)
    expected = sum(run.inputs[0].float() for run in runs).to(torch.bfloat16)
    for rank, run in enumerate(runs):
        assert_close(1, expected, run.output, W, f"rank {rank}")
        assert_close(1, run.output, expected, W, f"rank {rank}")
    if W > 1:
        assert_differs(1, runs[0].output, runs[0].inputs[0], W, "no communication")
    assert_differs(1, runs[0].output, torch.zeros_like(runs[0].output), W, "zeros")
