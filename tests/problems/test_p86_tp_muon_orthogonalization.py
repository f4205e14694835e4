import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

QUINTIC = [
    (4.0848, -6.8946, 2.9270),
    (3.9505, -6.3029, 2.6377),
    (3.7418, -5.5913, 2.3037),
    (2.8769, -3.1427, 1.2046),
    (2.8366, -3.0525, 1.2012),
]


def newton_schulz(X, dtype=torch.float64):
    """Independent quintic Newton-Schulz on the whole matrix: X <- aX + b(XX^T)X + c(XX^T)^2 X, with p = XX^T."""
    X = X.to(dtype)
    X = X / X.norm().clamp_min(1e-7)
    for a, b, c in QUINTIC:
        P = X @ X.T
        X = a * X + b * (P @ X) + c * (P @ (P @ X))
    return X


@pytest.mark.parametrize("W,seed", [(1, 6), (2, 6), (4, 15)])
def test_reference_matches_full_matrix(W, seed):
    runs = run_reference(86, W, seed=seed)
    C = -(-512 // W) * W
    assert runs[0].inputs[0].shape == (512, C // W) and runs[0].inputs[1:4] == (5, "quintic", 1)
    full = torch.cat([run.inputs[0] for run in runs], dim=1)
    for name, dtype in (("float64", torch.float64), ("bf16 iteration", torch.bfloat16)):
        result = newton_schulz(full, dtype).to(torch.bfloat16).split(C // W, dim=1)
        for rank, run in enumerate(runs):
            assert_close(86, run.output, result[rank], W, f"{name}, rank {rank}")

    out = runs[-1].output
    assert_differs(86, out, torch.zeros_like(out), W, "zeros")
    assert_differs(86, out, runs[-1].inputs[0], W, "input returned")
    if W > 1:
        alone = newton_schulz(runs[-1].inputs[0]).to(torch.bfloat16)
        assert_differs(86, out, alone, W, "no communication")


def test_partition_dim_0_is_the_transpose():
    import problems

    reference = problems.get(86).solution

    def rows_sharded(x, steps, kind, dim, group):
        return reference(x.t().contiguous(), steps, kind, 0, group)

    runs = run_reference(86, 2, seed=1, solution=rows_sharded)
    full = torch.cat([run.inputs[0] for run in runs], dim=1)
    result = newton_schulz(full).to(torch.bfloat16).split(256, dim=1)
    for rank, run in enumerate(runs):
        assert_close(86, run.output, result[rank].t(), 2, f"rank {rank}")
