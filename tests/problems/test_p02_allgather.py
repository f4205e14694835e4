import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


@pytest.mark.parametrize("seed", [5, 11])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_matches_stacked_inputs(W, seed):
    runs = run_reference(2, W, M=48, N=64, seed=seed)
    expected = torch.stack([run.inputs[0] for run in runs])
    for rank, run in enumerate(runs):
        assert run.output.shape == (W, 48, 64)
        assert torch.equal(run.output, expected), f"rank {rank}"
        assert_close(2, run.output, expected, W, f"rank {rank}")
    reference = runs[0].output
    assert_differs(2, reference, torch.zeros_like(reference), W, "zeros")
    assert_differs(2, reference, runs[0].inputs[0], W, "input unchanged")
    assert_differs(2, reference, expected.reshape(W * 48, 64), W, "concatenation instead of a stack")
    if W > 1:
        own = runs[1].inputs[0]
        assert_differs(2, reference, own.expand(W, 48, 64).clone(), W, "no communication (own tensor W times)")


def test_inputs_differ_between_trials_and_ranks():
    first = run_reference(2, 2, M=8, N=8, seed=1)
    second = run_reference(2, 2, M=8, N=8, seed=2)
    assert not torch.equal(first[0].inputs[0], first[1].inputs[0])
    assert not torch.equal(first[0].inputs[0], second[0].inputs[0])
