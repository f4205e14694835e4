import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

PID = 65


@pytest.mark.parametrize("W, seed", [(1, 1), (2, 2), (4, 3), (3, 4)])
def test_reference_matches_shifted_exchange(W, seed):
    runs = run_reference(PID, W, M=256, N=48, seed=seed)
    R = max(64, 256 // W)
    gathered = [run.inputs[0][run.inputs[1]] for run in runs]  # G of every rank
    chunks = [g.split(R) for g in gathered]
    assert runs[0].inputs[2:] == ([R] * W, [R] * W, None)
    for r, run in enumerate(runs):
        expected = torch.cat([chunks[(r + i) % W][(-i) % W] for i in range(W)])
        assert torch.equal(run.output, expected)  # pure data movement: bit-exact
        assert_close(PID, run.output, expected, W, f"rank {r}")
        assert_differs(PID, run.output, torch.zeros_like(expected), W, "zeros")
        if W > 1:
            assert_differs(PID, run.output, gathered[r], W, "no communication")
            plain = torch.cat([chunks[j][r] for j in range(W)])  # an unshifted all_to_all
            assert_differs(PID, run.output, plain, W, "unshifted all_to_all")
