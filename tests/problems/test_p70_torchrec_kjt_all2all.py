import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

PID = 70


def jagged(run, feature, B):
    """(lengths, values) of one feature of one source KJT."""
    lengths, values = run.inputs[0], run.inputs[1]
    before = int(lengths[: feature * B].sum())
    mine = lengths[feature * B : (feature + 1) * B]
    return mine, values[before : before + int(mine.sum())]


def expected_for(runs, rank, feature_major=True):
    W = len(runs)
    key_splits, B = runs[0].inputs[2], runs[0].inputs[3]
    first = sum(key_splits[:rank])
    pairs = (
        [(f, s) for f in range(key_splits[rank]) for s in range(W)]
        if feature_major
        else [(f, s) for s in range(W) for f in range(key_splits[rank])]
    )
    parts = [jagged(runs[s], first + f, B) for f, s in pairs]
    return {
        "lengths": torch.cat([p[0] for p in parts]),
        "values": torch.cat([p[1] for p in parts]),
        "stride": torch.tensor(W * B),
        "stride_per_rank": torch.tensor([B] * W),
    }


@pytest.mark.parametrize("W, seed", [(1, 1), (2, 2), (4, 3), (3, 4)])
def test_reference_matches_feature_major_regrouping(W, seed):
    runs = run_reference(PID, W, M=256, N=256, seed=seed)
    assert runs[0].inputs[2] == [1 + j % 3 for j in range(W)] and runs[0].inputs[3] == 512
    for r, run in enumerate(runs):
        expected = expected_for(runs, r)
        assert len(expected["lengths"]) == (1 + r % 3) * W * 512
        assert_close(PID, run.output, expected, W, f"rank {r}")
        assert_differs(PID, run.output, {k: torch.zeros_like(v) for k, v in expected.items()}, W, "zeros")
        if W > 1 and r % 3:  # with one local feature the recat is the identity
            assert_differs(PID, run.output, expected_for(runs, r, feature_major=False), W, "no recat")
        if W > 1:
            assert_differs(
                PID, run.output, expected_for([run], 0) | {"stride": expected["stride"]}, W, "no communication"
            )
