import pytest
import torch

import problems
from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

M, N, K = 64, 90, 512  # N = 90: W = 4 does not divide it, so the output narrows to 4 * 22 columns


def test_world_size_rule():
    allows = problems.get(14).allows_world_size
    assert allows(1) and allows(3) and allows(8) and not allows(0)


@pytest.mark.parametrize("seed", [5, 18])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_matches_column_blocks(W, seed):
    runs = run_reference(14, W, M=M, N=N, seed=seed)
    width = N // W
    # Independent: each rank's block computed in float64 from that rank's own A and B, concatenated in rank order.
    blocks = [(run.inputs[0].double() @ run.inputs[1].double()).to(torch.bfloat16) for run in runs]
    expected = torch.cat(blocks, dim=1)
    assert expected.shape == (M, W * width)
    for rank, run in enumerate(runs):
        A, B = run.inputs
        assert A.shape == (M, K) and B.shape == (K, width)
        assert_close(14, run.output, expected, W, f"rank {rank}")
        assert_differs(14, run.output, torch.zeros_like(expected), W, f"rank {rank} zeros")
        if W > 1:
            own_everywhere = (A.double() @ torch.cat([B] * W, dim=1).double()).to(torch.bfloat16)
            assert_differs(14, run.output, own_everywhere, W, f"rank {rank} no communication (own A for all blocks)")
            own_only = torch.zeros_like(expected)
            own_only[:, rank * width : (rank + 1) * width] = blocks[rank]
            assert_differs(14, run.output, own_only, W, f"rank {rank} own block only")
