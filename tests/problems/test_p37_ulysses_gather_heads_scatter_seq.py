import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


@pytest.mark.parametrize("W", [1, 2, 4])
@pytest.mark.parametrize("N, seed", [(64 * 8, 7), (64 * 3, 23)])  # T = 8 (divisible by W), T = 3 (padding)
def test_reference_scatters_sequence_and_gathers_heads(W, N, seed):
    runs = run_reference(37, W, M=128, N=N, seed=seed)
    xs = [run.inputs[0] for run in runs]
    B, T, H, D = xs[0].shape
    padded_T = -(-T // W) * W
    chunk = padded_T // W
    padded = [torch.cat([x, torch.zeros(B, padded_T - T, H, D, dtype=x.dtype)], dim=1) for x in xs]
    for rank, run in enumerate(runs):
        assert run.inputs[1:] == (1, 2, None)
        # Independent: rank r keeps positions [r*chunk, (r+1)*chunk) of every rank's padded sequence, with the
        # sources' heads side by side in rank order.
        expected = torch.cat([p[:, rank * chunk : (rank + 1) * chunk] for p in padded], dim=2)
        assert run.output.shape == (B, chunk, W * H, D)
        assert torch.equal(run.output, expected), f"rank {rank}: not an exact copy"
        assert_close(37, expected, run.output, W, f"rank {rank}")
        if rank * chunk >= T:
            assert not expected.any()  # all its positions are padding: zeros is the right answer (inherent)
            continue
        assert_differs(37, expected, torch.zeros_like(expected), W, f"rank {rank} zeros")
        if W > 1:
            local = padded[rank][:, rank * chunk : (rank + 1) * chunk].repeat(1, 1, W, 1)
            assert_differs(37, expected, local, W, f"rank {rank} own positions replicated (no communication)")
