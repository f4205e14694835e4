import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

M, N = 128, 96
BF16 = torch.bfloat16


def bf16_ring(partials, start, step):
    """NCCL-like: bf16 partials added hop by hop in bf16, from rank ``start`` in direction ``step``."""
    W = len(partials)
    acc = partials[start]
    for hop in range(1, W):
        acc = acc + partials[(start + step * hop) % W]  # a bf16 addition: rounded at every hop
    return acc


@pytest.mark.parametrize("seed", [1, 14])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_matches_independent_sums(W, seed):
    runs = run_reference(9, W, M=M, N=N, seed=seed)
    for run in runs:
        X_hat, dY = run.inputs
        assert X_hat.shape == dY.shape == (M, N) and X_hat.dtype == dY.dtype == BF16
        assert torch.allclose(X_hat.float().norm(dim=1), torch.ones(M), atol=2e-2), "rows of X_hat have unit norm"
    partial_gamma = [(run.inputs[1] * run.inputs[0]).sum(0) for run in runs]  # bf16 ops, as a naive kernel
    partial_beta = [run.inputs[1].sum(0) for run in runs]
    # A fused kernel: products and sums in float64 over every row of every rank, rounded once.
    fused = (
        sum((run.inputs[1].double() * run.inputs[0].double()).sum(0) for run in runs).to(BF16),
        sum(run.inputs[1].double().sum(0) for run in runs).to(BF16),
    )
    candidates = {"fused fp64": fused}
    for start in range(W):
        for step in (1, -1):
            candidates[f"bf16 ring from {start} step {step}"] = (
                bf16_ring(partial_gamma, start, step),
                bf16_ring(partial_beta, start, step),
            )
    for rank, run in enumerate(runs):
        d_gamma, d_beta = run.output
        assert isinstance(run.output, tuple) and d_gamma.shape == d_beta.shape == (N,)
        for name, answer in candidates.items():
            assert_close(9, run.output, answer, W, f"rank {rank} vs {name}")
    reference = runs[0].output
    assert_differs(9, reference, (torch.zeros(N, dtype=BF16), torch.zeros(N, dtype=BF16)), W, "zeros")
    assert_differs(9, reference, (reference[1], reference[0]), W, "(d_beta, d_gamma) order")
    assert_differs(9, reference, runs[0].inputs, W, "inputs unchanged")
    if W > 1:
        assert_differs(9, reference, (partial_gamma[0], partial_beta[0]), W, "no communication")
        without_last = (bf16_ring(partial_gamma[:-1], 0, 1), bf16_ring(partial_beta[:-1], 0, 1))
        assert_differs(9, reference, without_last, W, "one rank missing")
