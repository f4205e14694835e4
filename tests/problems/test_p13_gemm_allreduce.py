import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


def bf16_ring(partials, start):
    """An independent reduction: bf16 additions in ring order from ``start``, as NCCL might do."""
    acc = partials[start]
    for step in range(1, len(partials)):
        acc = (acc + partials[(start + step) % len(partials)]).to(torch.bfloat16)
    return acc


@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_matches_independent_sum(W):
    runs = run_reference(13, W, M=64, N=48, seed=3)
    partials = [(run.inputs[0] @ run.inputs[1]).to(torch.bfloat16) for run in runs]
    for start in range(W):
        expected = bf16_ring(partials, start)
        for rank, run in enumerate(runs):
            assert_close(13, run.output, expected, W, f"ring from {start}, rank {rank}")
    assert_differs(13, runs[0].output, torch.zeros_like(runs[0].output), W, "zeros")
    if W > 1:
        assert_differs(13, runs[0].output, partials[0], W, "no communication")
