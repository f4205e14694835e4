import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


def kept_tokens(row, top_k=10, top_p=0.9):
    """Independent filter for one full-vocab row, in fp32: the vocab ids that survive top-k then top-p."""
    vals = row.float()
    kth = torch.topk(vals, top_k).values[-1]
    ids = (vals >= kth).nonzero().view(-1)  # ties at the k-th largest are kept
    ids = ids[torch.argsort(vals[ids], stable=True)]  # ascending
    cum = torch.cumsum(torch.softmax(vals[ids], dim=0), dim=0)
    survive = cum > 1 - top_p
    survive[-1] = True
    return ids[survive]


def log_prob(row, token):
    """log p(token) over the kept set; -inf when the token is filtered out."""
    ids = kept_tokens(row)
    if token not in ids.tolist():
        return float("-inf")
    return torch.log_softmax(row.float()[ids], dim=0)[ids.tolist().index(token)].item()


def gather_rows(runs):
    """Full-vocab logits (T, V) from every rank's vocab shard."""
    shards = [run.inputs[0] for run in runs]
    return torch.cat(shards, dim=-1).reshape(-1, 256)


def global_log_probs(runs):
    rows, target = gather_rows(runs), runs[0].inputs[1]
    values = [log_prob(rows[n], int(t)) for n, t in enumerate(target.reshape(-1))]
    return torch.tensor(values, dtype=torch.float32).view(target.shape)


def local_log_probs(run, W, rank):
    """What a rank computes without communication: its own vocab shard treated as the whole vocabulary."""
    shard, target = run.inputs[0], run.inputs[1]
    Vl = shard.shape[-1]
    out = []
    for n, t in enumerate(target.reshape(-1).tolist()):
        row = shard.reshape(-1, Vl)[n].float()
        ids = kept_tokens(row, top_k=min(10, Vl))
        local = t - rank * Vl
        out.append(
            torch.log_softmax(row[ids], 0)[ids.tolist().index(local)].item() if local in ids.tolist() else float("-inf")
        )
    return torch.tensor(out).view(target.shape)


@pytest.mark.parametrize("W,M,seed", [(1, 1024, 4), (2, 1024, 4), (2, 2048, 9), (4, 2048, 9)])
def test_reference_matches_independent_filter(W, M, seed):
    runs = run_reference(82, W, M=M, seed=seed, trial=1)
    logits, target, group, top_k, top_p = runs[0].inputs
    B, S = max(1, min(M // 512, 4)), -(-max(W, min(M // 128, 32)) // W) * W
    assert logits.shape == (B, S, 256 // W) and target.shape == (B, S) and (top_k, top_p) == (10, 0.9)
    assert target.reshape(-1).tolist() == [(17 * n + 4) % 256 for n in range(B * S)]
    expected = global_log_probs(runs)
    finite = torch.isfinite(expected)
    assert finite.float().mean() > 0.5 and (expected[finite] < -0.05).float().mean() > 0.5  # not mostly 0
    for rank, run in enumerate(runs):
        assert_close(82, run.output, expected, W, f"rank {rank}")

    out = runs[-1].output
    assert_differs(82, out, torch.zeros_like(out), W, "zeros")
    if W > 1:
        assert_differs(82, out, local_log_probs(runs[-1], W, W - 1), W, "no communication")


def test_top_p_cut_has_margin():
    """Every row's cumulative sums stay away from the cut, so a bf16 or fp32 filter keeps the same tokens."""
    from problems._vocab_topk_logprob import top_p_margin

    runs = run_reference(82, 2, M=2048, seed=13)
    assert (top_p_margin(gather_rows(runs)) >= 0.02).all()
