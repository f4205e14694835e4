import pytest
import torch

import problems
from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


def suppress(masks, last_occluded, threshold, reverse):
    """Independent suppression: explicit pair loop over the gathered objects, set sizes from boolean masks."""
    T = masks.shape[0]
    fg = [m > 0 for m in masks]
    flags = [False] * T
    for i in range(T):
        for j in range(i + 1, T):
            inter = int((fg[i] & fg[j]).sum())
            union = int((fg[i] | fg[j]).sum())
            if inter / max(union, 1) < threshold:
                continue
            li, lj = int(last_occluded[i]), int(last_occluded[j])
            first = (li < lj) if reverse else (li > lj)
            second = (lj < li) if reverse else (lj > li)
            flags[i] |= first and lj > -1
            flags[j] |= second and li > -1
    out = masks.float().clone()
    out[torch.tensor(flags, dtype=torch.bool)] = -10.0
    return out, torch.tensor(flags)


def check(runs, W, reverse=False):
    masks = torch.cat([run.inputs[0] for run in runs]).float()
    scores = torch.cat([run.inputs[1] for run in runs]).float()
    last_occluded, threshold = runs[0].inputs[3], runs[0].inputs[4]
    expected_masks, flags = suppress(masks, last_occluded, threshold, reverse)
    for rank, run in enumerate(runs):
        assert_close(81, run.output, (expected_masks, scores, flags), W, f"rank {rank}")
    out = runs[-1].output
    assert_differs(81, out, tuple(torch.zeros_like(t) for t in out), W, "zeros")
    if W > 1:
        local = runs[-1].inputs[0].float()
        assert_differs(
            81,
            out,
            (local, runs[-1].inputs[1].float(), torch.zeros(len(local), dtype=torch.bool)),
            W,
            "no communication",
        )
    return flags


@pytest.mark.parametrize("W,trial,seed", [(1, 2, 1), (2, 1, 1), (4, 0, 8), (4, 1, 3)])
def test_reference_matches_independent_suppression(W, trial, seed):
    runs = run_reference(81, W, trial=trial, seed=seed)
    counts = [1 + ((i + trial) % 3) for i in range(W)]
    assert runs[0].inputs[2] == counts
    flags = check(runs, W)
    if W > 1:
        assert flags.any() and not flags.all()  # the data really exercises suppression


def test_reverse_rule():
    reference = problems.get(81).solution

    def reversed_call(masks, scores, counts, occluded, threshold, reverse, group):
        return reference(masks, scores, counts, occluded, threshold, True, group)

    runs = run_reference(81, 4, trial=0, seed=8, solution=reversed_call)
    assert check(runs, 4, reverse=True).any()
