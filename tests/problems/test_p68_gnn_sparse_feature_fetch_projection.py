import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

PID = 68


@pytest.mark.parametrize("W, seed, N", [(1, 1, 128), (2, 2, 256), (4, 3, 128), (3, 4, 256)])
def test_reference_matches_global_lookup(W, seed, N):
    runs = run_reference(PID, W, M=256, N=N, seed=seed)
    table = torch.cat([run.inputs[0] for run in runs]).double()
    assert runs[0].inputs[3] == table.shape[0] and table.shape[1] == (256 if N >= 256 else 128)
    for r, run in enumerate(runs):
        shard, ids, proj = run.inputs[:3]
        # Only the addressable rows are drawn (the rest are zeros): every row an id asks for must be a drawn one.
        assert (table[ids].abs().sum(1) > 0).all()
        expected = (table[ids] @ proj.double()).to(torch.bfloat16)
        assert_close(PID, run.output, expected, W, f"rank {r}")
        assert_differs(PID, run.output, torch.zeros_like(expected), W, "zeros")
        if W > 1:
            local = (shard[ids % shard.shape[0]].double() @ proj.double()).to(torch.bfloat16)
            assert_differs(PID, run.output, local, W, "no communication (local shard)")
