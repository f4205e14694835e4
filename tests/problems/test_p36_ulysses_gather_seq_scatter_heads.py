import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference, run_world

M, N = 128, 192  # B = 2, T = 3


@pytest.mark.parametrize("seed", [6, 19])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_gathers_sequence_and_scatters_heads(W, seed):
    runs = run_reference(36, W, M=M, N=N, seed=seed)
    xs = [run.inputs[0] for run in runs]
    B, T, H, D = xs[0].shape
    assert (B, T, H, D) == (2, 3, 8, 64)
    h = H // W
    for rank, run in enumerate(runs):
        assert run.inputs[1:] == (1, 2, None, 0)
        # Independent: the global sequence (all ranks' tokens in rank order), restricted to rank r's head block.
        expected = torch.cat(xs, dim=1)[:, :, rank * h : (rank + 1) * h].contiguous()
        assert run.output.shape == (B, W * T, h, D)
        assert torch.equal(run.output, expected), f"rank {rank}: not an exact copy"
        assert_close(36, expected, run.output, W, f"rank {rank}")
        assert_differs(36, expected, torch.zeros_like(expected), W, f"rank {rank} zeros")
        if W > 1:
            local = xs[rank][:, :, rank * h : (rank + 1) * h].repeat(1, W, 1, 1)
            assert_differs(36, expected, local, W, f"rank {rank} own tokens replicated (no communication)")
            assert_differs(36, expected, xs[rank].reshape(expected.shape), W, f"rank {rank} input reshaped")


def _trimmed(rank, W):
    from problems.p36_ulysses_gather_seq_scatter_heads import solution

    x = torch.randn(1, 2, 8, 4, generator=torch.Generator().manual_seed(rank)).to(torch.bfloat16)
    return x, solution(x, 1, 2, None, 3)


def test_unpadded_dim_size_trims_the_gathered_sequence():
    results = run_world(_trimmed, 2)
    full = torch.cat([x for x, _ in results], dim=1)
    for rank, (_, out) in enumerate(results):
        assert torch.equal(out, full[:, :3, rank * 4 : (rank + 1) * 4]), f"rank {rank}"


def test_rejects_world_size_not_dividing_heads():
    with pytest.raises(RuntimeError, match="must divide num_heads"):
        run_reference(36, 3, M=M, N=N)
