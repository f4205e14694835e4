import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

BF16 = torch.bfloat16


def bf16(x):
    return torch.tensor(float(x), dtype=torch.float64).to(BF16)


def independent(runs, start):
    """The unrolled autograd function with PKB's dtype rules, summing the bf16 partials in ring order from start."""
    W = len(runs)
    partials = [bf16(float(r.inputs[0]) * float(bf16(int(r.inputs[1])))) for r in runs]  # D * int64 -> D
    acc = partials[start]
    for step in range(1, W):
        acc = bf16(float(acc) + float(partials[(start + step) % W]))
    outputs = []
    for run in runs:
        loss, local, total, grad_out, grad_sum = run.inputs
        normalized = bf16(float(acc) / float(bf16(int(total))))
        grad = bf16(float(bf16(float(grad_out) * float(bf16(int(local))))) / float(bf16(int(total))))
        grad = bf16(float(grad) + float(bf16(float(grad_sum) * float(bf16(int(local))))))
        outputs.append((normalized, acc, grad))
    return outputs


@pytest.mark.parametrize("W,seed", [(1, 0), (2, 0), (2, 8), (4, 8)])
def test_reference_matches_any_reduction_order(W, seed):
    M, N = 64, 128
    runs = run_reference(23, W, M=M, N=N, seed=seed)
    counts = [int(run.inputs[1]) for run in runs]
    for run in runs:
        assert int(run.inputs[2]) == sum(counts) and all(
            M * N // 4 < c <= M * N and float(bf16(c)) == c for c in counts
        )
        assert all(t.dim() == 0 for t in run.inputs) and run.inputs[1].dtype == torch.int64
    for start in range(W):
        for rank, (run, expected) in enumerate(zip(runs, independent(runs, start), strict=True)):
            assert all(t.dtype == BF16 and t.dim() == 0 for t in run.output)
            assert_close(23, run.output, expected, W, f"ring from {start}, rank {rank}")
    # Exact arithmetic (float64, no bf16 rounding anywhere) is also within the check.
    exact_sum = sum(float(r.inputs[0]) * int(r.inputs[1]) for r in runs)
    for run in runs:
        loss, local, total, grad_out, grad_sum = run.inputs
        exact = (
            exact_sum / int(total),
            exact_sum,
            float(grad_out) * int(local) / int(total) + float(grad_sum) * int(local),
        )
        assert_close(23, run.output, tuple(bf16(v) for v in exact), W, "exact")
    out = runs[0].output
    assert_differs(23, out, tuple(torch.zeros_like(t) for t in out), W, "zeros")
    if W > 1:
        loss, local, total = runs[0].inputs[:3]
        local_sum = bf16(float(loss) * int(local))
        assert_differs(23, out, (bf16(float(local_sum) / int(total)), local_sum, out[2]), W, "no communication")
