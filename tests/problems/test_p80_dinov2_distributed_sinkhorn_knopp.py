import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


def sinkhorn(logits, temp, iterations=3):
    """Independent Sinkhorn-Knopp on the whole batch (samples x prototypes), float64, no transposes."""
    Q = torch.exp(logits.double() / temp)
    n_samples, n_protos = Q.shape
    Q = Q / Q.sum()
    for _ in range(iterations):
        Q = Q / Q.sum(dim=0, keepdim=True) / n_protos  # each prototype gets mass 1/P over all samples
        Q = Q / Q.sum(dim=1, keepdim=True) / n_samples  # each sample gets mass 1/B
    return (Q * n_samples).float()


@pytest.mark.parametrize("W,seed", [(1, 2), (2, 2), (4, 7)])
def test_reference_matches_global_sinkhorn(W, seed):
    runs = run_reference(80, W, M=64, seed=seed)
    x, temp, count, iters = runs[0].inputs[:4]
    assert x.shape == (512, 2048) and x.dtype == torch.float32 and count.tolist() == [512] and iters == 3
    expected = sinkhorn(torch.cat([run.inputs[0] for run in runs]), temp).split(512)
    for rank, run in enumerate(runs):
        assert run.output.is_contiguous()
        assert_close(80, run.output, expected[rank], W, f"rank {rank}")

    out = runs[-1].output
    assert_differs(80, out, torch.zeros_like(out), W, "zeros")
    assert_differs(80, out, runs[-1].inputs[0], W, "input returned")
    assert_differs(80, out, torch.full_like(out, 1 / 2048), W, "uniform")
    if W > 1:
        assert_differs(80, out, sinkhorn(runs[-1].inputs[0], temp), W, "no communication")
