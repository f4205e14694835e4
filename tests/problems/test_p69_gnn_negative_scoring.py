import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

PID = 69


def count_rule(pos, neg):
    """1 + the number of negatives whose sigmoid (in the scores' dtype) is strictly above the positive's."""
    return 1 + (torch.sigmoid(neg) > torch.sigmoid(pos)[:, None]).sum(dim=1)


@pytest.mark.parametrize("W, seed", [(1, 1), (2, 2), (4, 3), (3, 4)])
def test_reference_matches_count_rule(W, seed):
    runs = run_reference(PID, W, M=256, N=200, seed=seed)
    pos = torch.cat([run.inputs[0] for run in runs])
    neg = torch.cat([run.inputs[1] for run in runs])
    assert [len(run.inputs[0]) for run in runs] == [max(16, 256 // W) + r % 3 for r in range(W)]
    expected = count_rule(pos, neg)
    ties = (torch.sigmoid(neg) == torch.sigmoid(pos)[:, None]).any(dim=1).float().mean()
    assert ties > 0.3  # the tie rule matters for many rows
    for r, run in enumerate(runs):
        assert torch.equal(run.output, expected)  # exact here: same sigmoid, same rule
        assert_close(PID, run.output, expected, W, f"rank {r}")
        assert_differs(PID, run.output, torch.zeros_like(expected), W, "zeros")
        assert_differs(PID, run.output, count_rule(pos.float(), neg.float()), W, "fp32 sigmoid")
        assert_differs(
            PID,
            run.output,
            expected + (torch.sigmoid(neg) == torch.sigmoid(pos)[:, None]).sum(1),
            W,
            "positive placed after its ties",
        )
        if W > 1:
            assert_differs(PID, run.output, count_rule(run.inputs[0], run.inputs[1]), W, "no communication")
