import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference, run_world

M, N = 128, 192  # B = 2, T = 3
C = 512


def expected_for(xs, rank, W):
    """Independent closed form: [q | k | v] column slices of rank r's heads, all ranks' tokens in rank order."""
    c = C // W
    pieces = [torch.cat([x[:, :, j * C + rank * c : j * C + (rank + 1) * c] for j in range(3)], dim=2) for x in xs]
    return torch.cat(pieces, dim=1)


@pytest.mark.parametrize("seed", [8, 21])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_packs_q_k_v_slices_of_local_heads(W, seed):
    runs = run_reference(38, W, M=M, N=N, seed=seed)
    xs = [run.inputs[0] for run in runs]
    B, T, _ = xs[0].shape
    for rank, run in enumerate(runs):
        assert run.inputs[1:] == (1, None, None, True)
        expected = expected_for(xs, rank, W)
        assert run.output.shape == (B, W * T, 3 * C // W)
        assert torch.equal(run.output, expected), f"rank {rank}: not an exact copy"
        assert_close(38, expected, run.output, W, f"rank {rank}")
        assert_differs(38, expected, torch.zeros_like(expected), W, f"rank {rank} zeros")
        if W > 1:
            local = expected_for([xs[rank]] * W, rank, W)
            assert_differs(38, expected, local, W, f"rank {rank} own tokens replicated (no communication)")
            # The trap named in the spec: a plain head split of the flat 1536-wide dim.
            flat_split = torch.cat([x[:, :, rank * 3 * C // W : (rank + 1) * 3 * C // W] for x in xs], dim=1)
            assert_differs(38, expected, flat_split, W, f"rank {rank} flat split")


def _four_d(rank, W):
    from problems.p38_ulysses_gather_seq_scatter_heads_qkv import solution

    x = torch.randn(1, 2, 3 * C, generator=torch.Generator().manual_seed(rank)).to(torch.bfloat16)
    return x, solution(x, 1, None, None, False), solution(x, 1, None, 3, True)


def test_restore_shape_false_and_trim():
    W = 2
    results = run_world(_four_d, W)
    xs = [x for x, _, _ in results]
    for rank, (_, four_d, trimmed) in enumerate(results):
        expected = expected_for(xs, rank, W)
        assert torch.equal(four_d, expected.view(1, 4, 3, C // W)), f"rank {rank} 4-D"
        assert torch.equal(trimmed, expected[:, :3]), f"rank {rank} trimmed"
