import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


def rms_norm_global(hidden, weight, eps):
    """Plain RMSNorm over the whole (unsharded) hidden dimension, in float64."""
    x = hidden.double()
    normalized = x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (weight.double() * normalized).to(hidden.dtype)


@pytest.mark.parametrize("W,seed", [(1, 0), (2, 0), (2, 11), (4, 11)])
def test_reference_matches_unsharded_rms_norm(W, seed):
    M, N = 48, 64
    runs = run_reference(18, W, M=M, N=N, seed=seed)
    hidden = torch.cat([run.inputs[0] for run in runs], dim=1)
    weight = torch.cat([run.inputs[1] for run in runs])
    eps = runs[0].inputs[2]
    assert isinstance(eps, float) and eps == 1e-5
    expected = rms_norm_global(hidden, weight, eps)
    for rank, run in enumerate(runs):
        mine = expected[:, rank * N : (rank + 1) * N]
        assert run.output.shape == (M, N) and run.output.dtype == torch.bfloat16
        assert_close(18, run.output, mine, W, f"rank {rank}")
        assert_differs(18, run.output, torch.zeros_like(run.output), W, "zeros")
        assert_differs(18, run.output, run.inputs[0], W, "input unchanged")
        if W > 1:
            local = rms_norm_global(run.inputs[0], run.inputs[1], eps)
            assert_differs(18, run.output, local, W, "local mean square (no communication)")
