import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

S, E = 64, 48


@pytest.mark.parametrize("seed", [2, 30])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_matches_owner_grouped_lookup(W, seed):
    runs = run_reference(10, W, M=S, N=E, seed=seed)
    table = torch.cat([run.inputs[1] for run in runs])  # the global table T, shards in rank order
    for rank, run in enumerate(runs):
        indices, shard = run.inputs
        assert indices.shape == (S,) and indices.dtype == torch.int64 and shard.shape == (S, E)
        assert 0 <= int(indices.min()) and int(indices.max()) < W * S
        # Independent: walk the owners in ascending order and collect their lookups in query order.
        grouped = [g for owner in range(W) for g in indices.tolist() if g // S == owner]
        expected = table[torch.tensor(grouped)]
        assert torch.equal(run.output, expected), f"rank {rank}: not exact copies in owner-grouped order"
        assert_close(10, run.output, expected, W, f"rank {rank}")
        assert_differs(10, run.output, torch.zeros_like(expected), W, f"rank {rank} zeros")
        assert_differs(10, run.output, shard, W, f"rank {rank} shard unchanged")
        if W > 1:
            assert_differs(10, run.output, table[indices], W, f"rank {rank} query order")
            local_only = shard[(torch.tensor(grouped) - rank * S).clamp(0, S - 1)]
            assert_differs(10, run.output, local_only, W, f"rank {rank} no communication")
