import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

M = 8  # P = 512


def adam_fp32(g, w, m, v, lr, beta1, beta2, eps, step):
    """Independent: the Adam step in fp32 from the bf16 inputs, rounded once."""
    g, w, m, v = (t.float() for t in (g, w, m, v))
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    w = w - lr * (m / (1 - beta1**step)) / ((v / (1 - beta2**step)).sqrt() + eps)
    return w.to(torch.bfloat16)


@pytest.mark.parametrize("seed", [18, 49])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_matches_independent_update(W, seed):
    runs = run_reference(43, W, M=M, N=32, seed=seed, trial=seed)
    for run in runs:
        assert [tuple(t.shape) for t in run.inputs[:4]] == [(512,)] * 4
        assert run.inputs[4:8] == (0.1, 0.9, 0.999, 1e-8) and run.inputs[8] == 1 + seed % 7
    hyper = runs[0].inputs[4:]
    full = [torch.cat([run.inputs[i] for run in runs]) for i in range(4)]  # grad, master, exp_avg, exp_avg_sq
    expected = adam_fp32(*full, *hyper)
    for rank, run in enumerate(runs):
        assert_close(43, run.output, expected, W, f"rank {rank}")
        assert_differs(43, run.output, torch.zeros_like(expected), W, f"rank {rank} zeros")
        assert_differs(43, run.output, full[1], W, f"rank {rank} master weights without the step")
        zero_state = adam_fp32(full[0], full[1], torch.zeros_like(full[0]), torch.zeros_like(full[0]), *hyper)
        assert_differs(43, run.output, zero_state, W, f"rank {rank} moments ignored")
        if W == 1:
            assert_differs(43, run.output, run.inputs[0], W, "grad_shard returned unchanged")
        else:
            own = adam_fp32(*run.inputs[:4], *hyper).repeat(W)
            assert_differs(43, run.output, own, W, f"rank {rank} own shard replicated (no communication)")
