import pytest
import torch

import problems
from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

M, N, K = 72, 88, 512


def test_world_size_rule():
    allows = problems.get(12).allows_world_size
    assert [W for W in range(1, 17) if allows(W)] == [1, 2, 4, 8, 16]


@pytest.mark.parametrize("seed", [4, 16])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_matches_blockwise_partial_products(W, seed):
    runs = run_reference(12, W, M=M, N=N, seed=seed)
    for rank, run in enumerate(runs):
        A_local, B = run.inputs
        assert A_local.shape == (M, K // W) and B.shape == (K, N)
        # Independent, as the spec's overlap suggestion: sum the partial products A_s @ B[block s] in float64.
        width = K // W
        partials = [runs[s].inputs[0].double() @ B[s * width : (s + 1) * width].double() for s in range(W)]
        expected = sum(partials).to(torch.bfloat16)
        assert run.output.shape == (M, N) and run.output.is_contiguous()
        assert_close(12, run.output, expected, W, f"rank {rank}")
        assert_differs(12, run.output, torch.zeros_like(expected), W, f"rank {rank} zeros")
        if W > 1:
            assert_differs(12, run.output, partials[rank].to(torch.bfloat16), W, f"rank {rank} no communication")
