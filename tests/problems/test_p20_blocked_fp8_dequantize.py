import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


def dequantize(y, s):
    """Independent dequantizer: chunk j, row m, column n uses scale s[j, (m * N + n) // 128], in float64."""
    W, M, N = y.shape
    flat_index = torch.arange(M * N).reshape(M, N)
    scales = s.double()[:, flat_index // 128]  # (W, M, N)
    return (y.double() * scales).float()


@pytest.mark.parametrize("W,seed", [(1, 0), (2, 0), (2, 9), (4, 9)])
def test_reference_matches_dequantize_then_exchange(W, seed):
    M, N = 24, 64  # 1536 elements per chunk: 12 blocks, each spanning two rows
    runs = run_reference(20, W, M=M, N=N, seed=seed)
    dequantized = [dequantize(run.inputs[0], run.inputs[1]) for run in runs]
    for rank, run in enumerate(runs):
        assert run.inputs[2] == 128
        expected = torch.stack([dequantized[src][rank] for src in range(W)])
        assert run.output.dtype == torch.float32 and run.output.shape == (W, M, N)
        assert torch.equal(run.output, expected), f"rank {rank}: not bit-exact"
        assert_close(20, run.output, expected, W, f"rank {rank}")
        assert_differs(20, run.output, torch.zeros_like(run.output), W, "zeros")
        assert_differs(20, run.output, run.inputs[0].float(), W, "input unchanged")
        if W > 1:
            assert_differs(20, run.output, dequantized[rank], W, "own chunks (no communication)")
