import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

M, N = 36, 44


@pytest.mark.parametrize("seed", [10, 23])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_root_gets_stack_and_others_their_input(W, seed):
    runs = run_reference(6, W, M=M, N=N, seed=seed)
    assert all(len(run.inputs) == 1 for run in runs), "dst must not be passed"
    stacked = torch.stack([run.inputs[0] for run in runs])  # independent: stack every rank's input
    for rank, run in enumerate(runs):
        expected = stacked if rank == 0 else run.inputs[0]
        assert torch.equal(run.output, expected), f"rank {rank}: not an exact copy"
        assert_close(6, run.output, expected, W, f"rank {rank}")
        assert_differs(6, run.output, torch.zeros_like(expected), W, f"rank {rank} zeros")
    root = runs[0]
    assert root.output.shape == (W, M, N)
    assert_differs(6, root.output, root.inputs[0], W, "root returns its input unchanged")
    assert_differs(6, root.output, stacked.reshape(W * M, N), W, "concatenation instead of a stack")
    if W > 1:
        own = root.inputs[0].expand(W, M, N).clone()
        assert_differs(6, root.output, own, W, "no communication (own tensor W times)")
