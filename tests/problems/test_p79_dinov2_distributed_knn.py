import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


def knn(queries, train_T, labels, k):
    """Independent k-NN: one fp32 GEMM rounded to bf16, then a stable descending sort (ties by train index)."""
    sims = (queries.float() @ train_T.float()).to(queries.dtype)
    order = torch.sort(sims.float(), dim=1, descending=True, stable=True).indices[:, :k]
    return sims.gather(1, order), labels.expand(sims.shape[0], -1).gather(1, order)


@pytest.mark.parametrize("W,seed", [(1, 3), (2, 3), (4, 10)])
def test_reference_matches_global_knn(W, seed):
    runs = run_reference(79, W, M=64, N=64, seed=seed)
    test, train_T, labels, k = runs[0].inputs[:4]
    assert test.shape == (32, 384) and train_T.shape == (384, 1024) and k == 200
    all_train = torch.cat([run.inputs[1] for run in runs], dim=1)
    all_labels = torch.cat([run.inputs[2] for run in runs], dim=1)
    for rank, run in enumerate(runs):
        expected = knn(run.inputs[0], all_train, all_labels, k)
        assert_close(79, run.output, expected, W, f"rank {rank}")
        assert_close(79, expected, run.output, W, f"rank {rank}, swapped")

    sims, labs = runs[-1].output
    ties = (sims[:, 1:] == sims[:, :-1]).float().mean().item()
    assert ties > 0.2  # the data really has ties, so the tie rules are exercised
    assert_differs(79, runs[-1].output, (torch.zeros_like(sims), torch.zeros_like(labs)), W, "zeros")
    if W > 1:
        alone = knn(runs[-1].inputs[0], runs[-1].inputs[1], runs[-1].inputs[2], k)  # own shard only
        assert_differs(79, runs[-1].output, alone, W, "no communication")


def test_tie_rules():
    runs = run_reference(79, 2, M=64, N=64, seed=21)
    sims, labels = runs[0].output
    # Reversing every run of exactly equal similarities is a valid answer.
    permuted = labels.clone()
    for row in range(sims.shape[0]):
        start = 0
        for end in range(1, sims.shape[1] + 1):
            if end == sims.shape[1] or sims[row, end] != sims[row, start]:
                permuted[row, start:end] = labels[row, start:end].flip(0)
                start = end
    assert_close(79, (sims, labels), (sims, permuted), 2, "ties permuted")
    # A label far from any tie of its similarity is not.
    broken = labels.clone()
    broken[0, 0] = (broken[0, 0] + 1) % 1000
    assert_differs(79, (sims, labels), (sims, broken), 2, "top label changed")
    assert_differs(79, (sims, labels), (sims.float(), labels), 2, "wrong dtype")
