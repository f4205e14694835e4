import pytest
import torch

import problems
from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

M, N, K = 96, 80, 512


def test_world_size_rule():
    allows = problems.get(11).allows_world_size
    assert [W for W in range(1, 17) if allows(W)] == [1, 2, 4, 8, 16]


@pytest.mark.parametrize("seed", [3, 12])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_matches_float64_gemm(W, seed):
    runs = run_reference(11, W, M=M, N=N, seed=seed)
    A = torch.cat([run.inputs[0] for run in runs], dim=1).double()  # global A, column blocks in rank order
    assert A.shape == (M, K)
    for rank, run in enumerate(runs):
        A_local, B = run.inputs
        assert A_local.shape == (M, K // W) and B.shape == (K, N)
        expected = (A @ B.double()).to(torch.bfloat16)  # independent: float64 GEMM with this rank's own B
        assert run.output.shape == (M, N)
        assert_close(11, run.output, expected, W, f"rank {rank}")
        assert_differs(11, run.output, torch.zeros_like(expected), W, f"rank {rank} zeros")
        if W > 1:
            block = slice(rank * K // W, (rank + 1) * K // W)
            own_part = (A_local.double() @ B[block].double()).to(torch.bfloat16)
            assert_differs(11, run.output, own_part, W, f"rank {rank} no communication")
            other_B = (A @ runs[(rank + 1) % W].inputs[1].double()).to(torch.bfloat16)
            assert_differs(11, run.output, other_B, W, f"rank {rank} another rank's B")
