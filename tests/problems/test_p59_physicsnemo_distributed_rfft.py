import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

PID = 59


@pytest.mark.parametrize("W", [1, 2, 4])
@pytest.mark.parametrize("M, N, seed", [(128, 64, 1), (40, 49, 2)])
def test_reference_matches_global_rfft2(W, M, N, seed):
    runs = run_reference(PID, W, M=M, N=N, seed=seed)
    x_full = torch.cat([run.inputs[0] for run in runs], dim=2).double()
    B, H, Wd = x_full.shape
    assert (B, H % W, Wd % W) == (max(1, M // 64), 0, 0)
    assert runs[0].inputs[1:] == ((H, Wd), (1, 2), "ortho", None)
    full = torch.fft.rfft2(x_full, norm="ortho").to(torch.complex64)  # independent: one global transform
    rows = H // W
    for rank, run in enumerate(runs):
        expected = full[:, rank * rows : (rank + 1) * rows]
        assert run.output.shape == (B, rows, Wd // 2 + 1) and run.output.dtype == torch.complex64
        assert_close(PID, run.output, expected, W, f"rank {rank}")
        assert_differs(PID, run.output, torch.zeros_like(expected), W, "zeros")
        conjugate = expected.conj().resolve_conj()  # PKB's real-part-only check passed it
        assert_differs(PID, run.output, conjugate, W, "conjugate")
        if W > 1:
            # No communication: transform this rank's slab alone, as if the other columns were zero.
            local = torch.zeros_like(x_full)
            local[:, :, rank * (Wd // W) : (rank + 1) * (Wd // W)] = run.inputs[0].double()
            guess = torch.fft.rfft2(local, norm="ortho").to(torch.complex64)[:, rank * rows : (rank + 1) * rows]
            assert_differs(PID, run.output, guess, W, "no communication")
