import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

M, N = 32, 24


@pytest.mark.parametrize("seed", [5, 17])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_places_row_block_r_of_every_rank_side_by_side(W, seed):
    runs = run_reference(33, W, M=M, N=N, seed=seed)
    xs = [run.inputs[0] for run in runs]
    b = M // W
    for rank, run in enumerate(runs):
        assert run.inputs[1:] == (0, 1, None)
        # Independent: column block s of rank r's output is row block r of rank s's input.
        expected = torch.empty(b, W * N, dtype=torch.bfloat16)
        for s in range(W):
            expected[:, s * N : (s + 1) * N] = xs[s][rank * b : (rank + 1) * b]
        assert torch.equal(run.output, expected), f"rank {rank}: not an exact copy"
        assert_close(33, expected, run.output, W, f"rank {rank}")
        assert_differs(33, expected, torch.zeros_like(expected), W, f"rank {rank} zeros")
        if W > 1:
            own = xs[rank].reshape(b, W * N)  # the input reshaped: own row blocks side by side, no exchange
            assert_differs(33, expected, own, W, f"rank {rank} input reshaped (no communication)")
            local = xs[rank][rank * b : (rank + 1) * b].repeat(1, W)
            assert_differs(33, expected, local, W, f"rank {rank} own block replicated")
            assert_differs(33, expected, xs[rank], W, f"rank {rank} input unchanged")


def test_rejects_world_size_that_does_not_divide_M():
    with pytest.raises(RuntimeError, match="must divide M"):
        run_reference(33, 2, M=33, N=N, seed=1)
