import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

M, N = 64, 128  # d_in = 128, hidden = 64, d_out = 32, global batch 64


def gradients(X, y, W1, b1, W2, b2, dtype):
    """Manual backprop of mean((relu(X W1^T + b1) W2^T + b2 - y)^2), every op in ``dtype``.

    Each linear layer (GEMM plus bias) is rounded once, like F.linear: rounding the GEMM before adding the bias would
    flip the ReLU mask of pre-activations within an ulp of zero, which at these tiny batch sizes moves a gradient
    element beyond tolerance (at the default sizes such a flip moves m by ~0.003, harmless).
    """
    X, y, W1, b1, W2, b2 = (t.to(dtype) for t in (X, y, W1, b1, W2, b2))
    linear = lambda a, w, b: (a.float() @ w.float().T + b.float()).to(dtype)  # noqa: E731
    pre = linear(X, W1, b1)
    h = pre.clamp_min(0)
    dout = (out := linear(h, W2, b2)).sub(y).mul(2 / out.numel())
    dh = (dout @ W2) * (pre > 0)
    return [dh.T @ X, dh.sum(0), dout.T @ h, dout.sum(0)]


def adam(p, g, m, v, lr, beta1, beta2, eps, step):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    return p - lr * (m / (1 - beta1**step)) / ((v / (1 - beta2**step)).sqrt() + eps), m, v


def independent_step(runs, dtype, ring_start=0):
    """Rank 0's parameters and state, each rank's batch; gradients averaged over ranks (ring order in bf16)."""
    W = len(runs)
    params = runs[0].inputs[2:6]
    per_rank = [gradients(*run.inputs[:2], *params, dtype) for run in runs]
    grads = []
    for i in range(4):
        acc = per_rank[ring_start][i]
        for s in range(1, W):
            acc = (acc + per_rank[(ring_start + s) % W][i]).to(dtype)
        grads.append(acc / W)
    lr, beta1, beta2, eps, step = runs[0].inputs[14:19]
    results = [
        adam(p.to(dtype), g, m.to(dtype), v.to(dtype), lr, beta1, beta2, eps, step)
        for p, g, m, v in zip(params, grads, runs[0].inputs[6:10], runs[0].inputs[10:14], strict=True)
    ]
    return tuple(r[k].to(torch.bfloat16) for k in range(3) for r in results)


def _no_communication(*inputs):
    from evaluator.nulls import no_communication
    from problems.p40_ddp import solution

    with no_communication():
        return solution(*inputs)


@pytest.mark.parametrize("seed", [14, 45])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_matches_independent_step(W, seed):
    runs = run_reference(40, W, M=M, N=N, seed=seed, trial=seed)
    for rank, run in enumerate(runs):
        assert [tuple(t.shape) for t in run.inputs[:6]] == [
            (64 // W, 128),
            (64 // W, 32),
            (64, 128),
            (64,),
            (32, 64),
            (32,),
        ]
        assert run.inputs[14:18] == (0.1, 0.9, 0.999, 1e-8) and run.inputs[18] == 1 + seed % 7
        if rank:
            assert not any(t.any() for t in run.inputs[2:14])  # rank 0's parameters and state must win
    expected = [independent_step(runs, torch.float32)] + [independent_step(runs, torch.bfloat16, s) for s in range(W)]
    for rank, run in enumerate(runs):
        assert len(run.output) == 12
        for e in expected:
            assert_close(40, run.output, e, W, f"rank {rank}")
    out = runs[0].output
    assert_differs(40, out, tuple(torch.zeros_like(t) for t in out), W, "zeros")
    assert_differs(40, out, out[:4] + tuple(runs[0].inputs[6:14]), W, "moments not updated")
    assert_differs(40, out, tuple(runs[0].inputs[2:6]) + out[4:], W, "parameters not updated")
    if W > 1:
        for rank, local in enumerate(run_reference(40, W, M=M, N=N, seed=seed, trial=seed, solution=_no_communication)):
            assert_differs(40, runs[rank].output, local.output, W, f"rank {rank} no communication")
