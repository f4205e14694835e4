import math

import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


def closed_form(runs, rank, C, ranks=None):
    """out[i*spb+t, h] = softmax(q . K_i(kappa(h)) / sqrt(128)) V_i(kappa(h)), K_i/V_i from ``ranks`` (default: all)."""
    ranks = range(len(runs)) if ranks is None else ranks
    query, key_value, _, R = runs[rank].inputs[:4]
    spb = query.shape[0] // R
    Hq, Hkv = query.shape[1], key_value.shape[1]
    kappa = torch.arange(Hq) // (Hq // Hkv)
    out = torch.empty(query.shape, dtype=torch.float32)
    for i in range(R):
        kv = torch.cat([runs[s].inputs[1][i * spb : (i + 1) * spb] for s in ranks])[:C].float()
        k, v = kv[:, kappa, :128], kv[:, kappa, 128:]
        q = query[i * spb : (i + 1) * spb].float()
        weights = torch.softmax(torch.einsum("thd,chd->htc", q, k) / math.sqrt(128), dim=-1)
        out[i * spb : (i + 1) * spb] = torch.einsum("htc,chd->thd", weights, v)
    return out.to(torch.bfloat16)


@pytest.mark.parametrize("W,seed,heads,kv_heads", [(1, 4, 24, 8), (2, 4, 24, 8), (3, 8, 24, 3), (4, 8, 24, 8)])
def test_reference_matches_closed_form(W, seed, heads, kv_heads):
    runs = run_reference(77, W, seed=seed)
    query, key_value, k_ranges, R, C = runs[0].inputs[:5]
    assert (query.shape[1], key_value.shape[1], R) == (heads, kv_heads, 4)
    assert k_ranges.tolist() == [[i * C, (i + 1) * C] for i in range(4)]
    assert query.shape[0] == 4 * math.ceil(C / W)  # W = 3, 4 clip the padded tail of rank W-1
    for rank, run in enumerate(runs):
        assert_close(77, run.output, closed_form(runs, rank, C), W, f"rank {rank}")

    last = runs[-1].output
    assert_differs(77, last, torch.zeros_like(last), W, "zeros")
    assert_differs(77, last, runs[-1].inputs[0], W, "query returned")
    if W > 1:
        alone = closed_form(runs, W - 1, C, ranks=[W - 1])  # attention to the rank's own tokens only
        assert_differs(77, last, alone, W, "no communication")
