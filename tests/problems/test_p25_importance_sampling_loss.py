import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

BF16 = torch.bfloat16


def per_token(run, round_logits=True):
    """Float64 per-token quantities of one rank, from its inputs."""
    hidden, weight, labels, old, adv, ignore = run.inputs
    logits = hidden.double() @ weight.double().T
    if round_logits:
        logits = logits.to(BF16).double()  # F.linear's bf16 output
    valid = labels != ignore
    label_logit = logits.gather(1, labels.clamp(min=0)[:, None])[:, 0]
    ce = torch.where(valid, torch.logsumexp(logits, dim=-1) - label_logit, torch.zeros(()).double())
    delta = torch.where(valid, -ce - old.double(), torch.zeros(()).double()).clamp(-20, 20)
    ratio = delta.exp()
    pg = torch.where(valid, -ratio * adv.double(), torch.zeros(()).double())
    return dict(valid=valid, ce=ce, delta=delta, ratio=ratio, pg=pg)


def independent(runs, communicate=True, round_logits=True, mask=True):
    tokens = [per_token(run, round_logits) for run in runs]
    outputs = []
    for rank in range(len(runs)):
        pool = tokens if communicate else [tokens[rank]]
        cat = {k: torch.cat([t[k] for t in pool]) for k in tokens[0]}
        valid = cat["valid"] if mask else torch.ones_like(cat["valid"])
        n = max(int(valid.sum()), 1)
        r = cat["ratio"][valid]
        metrics = torch.tensor(
            [r.sum() / n, r.min(), r.max(), (r - cat["delta"][valid] - 1).sum() / n, cat["ce"][valid].sum() / n],
            dtype=torch.float32,
        )
        mine = tokens[rank]
        outputs.append(
            (
                torch.tensor(cat["pg"].sum().item() / n, dtype=torch.float32),
                None,
                (-mine["ce"]).to(BF16),
                mine["pg"].to(BF16),
                metrics,
            )
        )
    return outputs


@pytest.mark.parametrize("W,seed", [(1, 0), (2, 0), (2, 13), (4, 13)])
def test_reference_matches_float64_implementation(W, seed):
    M, N = 64, 32
    runs = run_reference(25, W, M=M, N=N, seed=seed)  # reduced: V = 1024
    hidden, weight, labels, old, adv, ignore = runs[0].inputs
    assert weight.shape == (1024, N) and labels.dtype == torch.int64 and ignore == -100
    assert any((run.inputs[2] == -100).any() for run in runs)  # the mask is exercised
    expected = independent(runs)
    fp32_logits = independent(runs, round_logits=False)
    for rank, run in enumerate(runs):
        loss, none, new_lp, pg, metrics = run.output
        assert none is None and loss.dtype == metrics.dtype == torch.float32 and new_lp.dtype == pg.dtype == BF16
        assert loss.abs() > 0.1 and metrics[1] < 1 < metrics[2]  # nothing is degenerate: ratios spread around 1
        assert_close(25, run.output, expected[rank], W, f"rank {rank}")
        assert_close(25, run.output, fp32_logits[rank], W, f"rank {rank}, fp32 logits")
        zeros = (
            torch.zeros_like(loss),
            None,
            torch.zeros_like(new_lp),
            torch.zeros_like(pg),
            torch.zeros_like(metrics),
        )
        assert_differs(25, run.output, zeros, W, "zeros")
        assert_differs(25, run.output, run.inputs[0], W, "input unchanged")
        assert_differs(25, run.output, independent(runs, mask=False)[rank], W, "ignore_index not masked")
    if W > 1:
        local = independent(runs, communicate=False)
        for rank, run in enumerate(runs):
            assert_differs(25, run.output, local[rank], W, f"rank {rank} local result (no communication)")
