import math

import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


def kda_float64(q, k, v, g, beta, a_log, dt_bias):
    """Independent KDA: per head, explicit K x V state matrices in float64."""
    _, T, H, K = q.shape
    out = torch.zeros(T, H, v.shape[-1], dtype=torch.float64)
    for h in range(H):
        rate = math.exp(float(a_log[h]))
        state = torch.zeros(K, v.shape[-1], dtype=torch.float64)
        for t in range(T):
            x = rate * (g[0, t, h].double() + dt_bias[h * K : (h + 1) * K].double())
            state = torch.diag(torch.exp(-5.0 * torch.sigmoid(x))) @ state
            kt = k[0, t, h].double()
            kt = kt / max(kt.norm().item(), 1e-12)
            qt = q[0, t, h].double()
            qt = qt / max(qt.norm().item(), 1e-12) / math.sqrt(K)
            u = (v[0, t, h].double() - kt @ state) * torch.sigmoid(beta[0, t, h].double())
            state = state + torch.outer(kt, u)
            out[t, h] = qt @ state
    return out.unsqueeze(0)


def layout(W):
    """(tp, cp) groups as lists of global ranks, as the spec builds them."""
    if W >= 4 and W % 2 == 0:
        return [[2 * c, 2 * c + 1] for c in range(W // 2)], [list(range(t, W, 2)) for t in range(2)]
    return [], [list(range(W))]


@pytest.mark.parametrize("W,seed", [(1, 3), (2, 3), (2, 11), (4, 5)])
def test_reference_matches_independent_kda(W, seed):
    runs = run_reference(74, W, seed=seed)
    tp_groups, cp_groups = layout(W)
    full = {}  # CP group index -> bf16 output of the whole sequence of that group
    for index, members in enumerate(cp_groups):
        parts = [torch.cat([runs[r].inputs[i] for r in members], dim=1) for i in range(5)]
        full[index] = kda_float64(*parts, *runs[0].inputs[5:7]).to(torch.bfloat16)
    L = runs[0].inputs[0].shape[1]
    for rank, run in enumerate(runs):
        cp_index = next(i for i, m in enumerate(cp_groups) if rank in m)
        cp_rank = cp_groups[cp_index].index(rank)
        if tp_groups:  # TP sum of the two CP groups' outputs, rounded once
            total = (full[0].float() + full[1].float()).to(torch.bfloat16)
        else:
            total = full[cp_index]
        expected = total[:, cp_rank * L : (cp_rank + 1) * L]
        assert_close(74, run.output, expected, W, f"rank {rank}")
        assert run.inputs[7].ranks == tuple(cp_groups[cp_index])
        assert (run.inputs[8] is None) == (not tp_groups)

    last = runs[-1]
    assert_differs(74, last.output, torch.zeros_like(last.output), W, "zeros")
    assert_differs(74, last.output, last.inputs[0], W, "q returned")
    if W > 1:
        alone = kda_float64(*last.inputs[:7]).to(torch.bfloat16)  # own 64 tokens, no gather, no TP sum
        assert_differs(74, last.output, alone, W, "no communication")
