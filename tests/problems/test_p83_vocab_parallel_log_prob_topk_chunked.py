import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.problems.test_p82_vocab_parallel_log_prob_topk import gather_rows, local_log_probs, log_prob
from tests.world import run_reference


@pytest.mark.parametrize("W,M,seed,chunks", [(1, 1024, 2, 4), (2, 1024, 2, 4), (4, 2048, 6, 4), (4, 512, 6, 1)])
def test_reference_matches_independent_filter(W, M, seed, chunks):
    runs = run_reference(83, W, M=M, seed=seed, trial=2)
    logits, target, group, top_k, top_p, chunk_size = runs[0].inputs
    B, S = target.shape
    assert (B * S) // (B * chunk_size) == chunks and chunk_size % W == 0
    assert target.reshape(-1).tolist() == [(19 * n + 7) % 256 for n in range(B * S)]
    # Chunking changes only the schedule: the result is every token's log-prob over the full vocabulary.
    rows = gather_rows(runs)
    expected = torch.tensor([log_prob(rows[n], int(t)) for n, t in enumerate(target.reshape(-1))]).view(B, S)
    assert torch.isfinite(expected).float().mean() > 0.5
    for rank, run in enumerate(runs):
        assert_close(83, run.output, expected, W, f"rank {rank}")

    out = runs[-1].output
    assert_differs(83, out, torch.zeros_like(out), W, "zeros")
    if W > 1:
        assert_differs(83, out, local_log_probs(runs[-1], W, W - 1), W, "no communication")
