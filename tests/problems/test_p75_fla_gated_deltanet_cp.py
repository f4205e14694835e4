import math

import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


def gdn_float64(q, k, v, gate, beta, a_log, dt_bias):
    """Independent Gated DeltaNet on one device: per head, explicit state matrices in float64."""
    _, T, H, K = q.shape
    out = torch.zeros(T, H, v.shape[-1], dtype=torch.float64)
    for h in range(H):
        rate = math.exp(float(a_log[h]))
        state = torch.zeros(K, v.shape[-1], dtype=torch.float64)
        for t in range(T):
            x = float(gate[0, t, h]) + float(dt_bias[h])
            softplus = math.log1p(math.exp(x))
            state = state * math.exp(-rate * softplus)
            kt = k[0, t, h].double()
            kt = kt / max(kt.norm().item(), 1e-6)
            qt = q[0, t, h].double()
            qt = qt / max(qt.norm().item(), 1e-6) / math.sqrt(K)
            u = (v[0, t, h].double() - kt @ state) * float(beta[0, t, h])
            state = state + torch.outer(kt, u)
            out[t, h] = qt @ state
    return out.unsqueeze(0)


@pytest.mark.parametrize("W,seed", [(1, 2), (2, 2), (2, 9), (4, 4)])
def test_reference_matches_single_device_gdn(W, seed):
    runs = run_reference(75, W, seed=seed)
    H = -(-6 // W) * W
    # The global problem: concatenated sequence, all H heads, the full decay vectors rebuilt from the slices.
    glob = [torch.cat([run.inputs[i] for run in runs], dim=1) for i in range(5)]
    a_log = torch.cat([run.inputs[5] for run in runs])
    dt_bias = torch.cat([run.inputs[6] for run in runs])
    assert a_log.shape == (H,) and a_log.dtype == torch.bfloat16
    expected = gdn_float64(*glob, a_log, dt_bias).to(torch.bfloat16)
    L = runs[0].inputs[0].shape[1]
    for rank, run in enumerate(runs):
        assert run.output.shape == (1, L, H, runs[0].inputs[2].shape[-1])
        assert_close(75, run.output, expected[:, rank * L : (rank + 1) * L], W, f"rank {rank}")

    last = runs[-1]
    assert_differs(75, last.output, torch.zeros_like(last.output), W, "zeros")
    if W > 1:
        # Sequence-local answer: the rank's own tokens only, with every head's decay parameters.
        alone = gdn_float64(*last.inputs[:5], a_log, dt_bias).to(torch.bfloat16)
        assert_differs(75, last.output, alone, W, "no communication")
