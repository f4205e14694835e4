import pytest
import torch

import problems
from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

PID = 60


def test_world_size_rule():
    allows = problems.get(PID).allows_world_size
    assert [W for W in range(1, 11) if allows(W)] == [1, 2, 3, 4, 5, 6, 8, 9, 10]


@pytest.mark.parametrize("W, seed", [(1, 1), (2, 2), (4, 3), (3, 4)])
def test_reference_matches_global_irfft2(W, seed):
    runs = run_reference(PID, W, seed=seed)
    spectrum = torch.cat([run.inputs[0] for run in runs], dim=-2).to(torch.complex128)
    assert spectrum.shape[-2:] == (720, 721)
    assert runs[0].inputs[1:] == ((720, 1440), (-2, -1), "ortho", None)
    field = torch.fft.irfft2(spectrum, s=(720, 1440), norm="ortho")  # independent: one global transform
    cols = 1440 // W
    for rank, run in enumerate(runs):
        expected = field[..., rank * cols : (rank + 1) * cols].float()
        assert run.output.dtype == torch.float32 and run.output.is_contiguous()
        assert_close(PID, run.output, expected, W, f"rank {rank}")
        assert_differs(PID, run.output, torch.zeros_like(expected), W, "zeros")
        if W > 1:
            # No communication: invert only this rank's rows of the spectrum.
            local = torch.zeros_like(spectrum)
            rows = 720 // W
            local[..., rank * rows : (rank + 1) * rows, :] = run.inputs[0]
            guess = torch.fft.irfft2(local, s=(720, 1440), norm="ortho")[..., rank * cols : (rank + 1) * cols].float()
            assert_differs(PID, run.output, guess, W, "no communication")
