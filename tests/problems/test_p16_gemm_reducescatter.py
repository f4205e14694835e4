import pytest
import torch

import problems
from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

M, N, K = 64, 72, 512
BF16 = torch.bfloat16


def test_world_size_rule():
    allows = problems.get(16).allows_world_size
    assert [W for W in range(1, 17) if allows(W)] == [1, 2, 4, 8, 16]


@pytest.mark.parametrize("seed", [7, 25])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_matches_independent_reductions(W, seed):
    runs = run_reference(16, W, M=M, N=N, seed=seed)
    rows = M // W
    partials = [(run.inputs[0] @ run.inputs[1]) for run in runs]  # bf16 GEMMs, rounded as PKB
    fused = (
        torch.cat([run.inputs[0] for run in runs], 1).double() @ torch.cat([run.inputs[1] for run in runs], 0).double()
    ).to(BF16)
    rotations = []
    for start in range(W):  # NCCL-like: bf16 additions hop by hop, in every rotation of the rank order
        acc = partials[start]
        for hop in range(1, W):
            acc = acc + partials[(start + hop) % W]
        rotations.append(acc)
    for rank, run in enumerate(runs):
        A_local, B_local = run.inputs
        assert A_local.shape == (M, K // W) and B_local.shape == (K // W, N)
        assert run.output.shape == (rows, N)
        here = slice(rank * rows, (rank + 1) * rows)
        assert_close(16, run.output, fused[here], W, f"rank {rank} vs fused fp64")
        for start, total in enumerate(rotations):
            assert_close(16, run.output, total[here], W, f"rank {rank} vs bf16 ring from {start}")
        assert_differs(16, run.output, torch.zeros_like(run.output), W, f"rank {rank} zeros")
        if W > 1:
            assert_differs(16, run.output, partials[rank][here], W, f"rank {rank} no communication")
            other = slice(((rank + 1) % W) * rows, ((rank + 1) % W + 1) * rows)
            assert_differs(16, run.output, fused[other], W, f"rank {rank} another row block")
