import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

PID = 67


@pytest.mark.parametrize("W, seed", [(1, 1), (2, 2), (4, 3), (3, 4)])
def test_reference_matches_owner_filter(W, seed):
    runs = run_reference(PID, W, M=256, N=64, seed=seed)
    for r, run in enumerate(runs):
        idx, value, num_nodes, _ = run.inputs
        assert num_nodes % W == 0 and idx.shape == (1024,) and value.shape == (1024, 64)
        mine = [other.inputs[0] % W == r for other in runs]  # per source, in original order
        expected = (
            torch.cat([o.inputs[0][m] for o, m in zip(runs, mine, strict=True)]),
            torch.cat([o.inputs[1][m] for o, m in zip(runs, mine, strict=True)]),
        )
        assert torch.equal(run.output[0], expected[0]) and torch.equal(run.output[1], expected[1])
        assert_close(PID, run.output, expected, W, f"rank {r}")
        assert_differs(PID, run.output, tuple(torch.zeros_like(t) for t in expected), W, "zeros")
        if W > 1:
            assert_differs(PID, run.output, (idx, value), W, "inputs unchanged")
            local = idx % W == r
            assert_differs(PID, run.output, (idx[local], value[local]), W, "no communication")
            # Same rows, grouped by source but in another order inside a source: fails (order is the answer).
            shuffled = tuple(
                torch.cat([t[m].flip(0) for t, m in zip([o.inputs[k] for o in runs], mine, strict=True)])
                for k in (0, 1)
            )
            assert_differs(PID, run.output, shuffled, W, "wrong order")
