import pytest
import torch
import torch.nn.functional as F

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

M, N = 62, 32  # M = 62 is rounded up to 63 rows at W = 3 and 64 at W = 4; H = 256 becomes 258 at W = 3
BF16 = torch.bfloat16


def mlp_rows(X_rows, W1, W2, round_z=True):
    """Independent: float64 GEMMs and SiLU, rounding Z, A and Y to bf16 where the spec says."""
    Z = X_rows.double() @ W1.double()
    if round_z:
        Z = Z.to(BF16).double()
    A = (Z * torch.sigmoid(Z)).to(BF16)
    return (A.double() @ W2.double()).to(BF16)


@pytest.mark.parametrize("seed", [6, 20])
@pytest.mark.parametrize("W", [1, 2, 3, 4])
def test_reference_matches_rowblock_mlp(W, seed):
    runs = run_reference(15, W, M=M, N=N, seed=seed)
    rows, hidden = -(-M // W) * W, -(-256 // W) * W
    block = rows // W
    X = torch.cat([run.inputs[0] for run in runs], dim=1)  # the global activation, column blocks in rank order
    assert X.shape == (rows, hidden)
    for rank, run in enumerate(runs):
        x_local, W1, W2 = run.inputs
        assert x_local.shape == (rows, hidden // W) and W1.shape == (hidden, 512) and W2.shape == (512, hidden)
        X_rows = X[rank * block : (rank + 1) * block]  # only the rows this rank needs: an all-to-all would suffice
        expected = mlp_rows(X_rows, W1, W2)
        assert run.output.shape == (block, hidden)
        assert_close(15, run.output, expected, W, f"rank {rank}")
        a_in_fp32 = (F.silu((X_rows.float() @ W1.float()).to(BF16).float()) @ W2.float()).to(BF16)
        assert_close(15, run.output, a_in_fp32, W, f"rank {rank} with A kept in fp32")

        assert_differs(15, run.output, torch.zeros_like(expected), W, f"rank {rank} zeros")
        assert_differs(15, run.output, (F.relu(X_rows @ W1) @ W2), W, f"rank {rank} ReLU instead of SiLU")
        if W == 1:
            assert_differs(15, run.output, x_local, W, "input unchanged")
        else:
            own_columns = torch.zeros_like(X_rows)
            width = hidden // W
            own_columns[:, rank * width : (rank + 1) * width] = x_local[rank * block : (rank + 1) * block]
            assert_differs(15, run.output, mlp_rows(own_columns, W1, W2), W, f"rank {rank} no communication")
            other = (rank + 1) % W
            wrong_rows = mlp_rows(X[other * block : (other + 1) * block], W1, W2)
            assert_differs(15, run.output, wrong_rows, W, f"rank {rank} another rank's row block")
