"""Checks shared by the Ulysses all-gather primitives (p34 into a tensor, p35 of variable lengths)."""

import torch

from tests.problems.helpers import assert_close, assert_differs


def assert_concatenates_every_shard_in_rank_order(pid, runs, W):
    """Every rank returns the rank shards (inputs[0]) stacked along dim 0 in rank order, exactly; the null answers
    (zeros, and for W > 1 the own shard, replicated or unchanged) fail the check. Returns (shards, expected)."""
    xs = [run.inputs[0] for run in runs]
    expected = torch.cat(xs, dim=0)  # independent: the global tensor, rank blocks stacked along dim 0
    for rank, run in enumerate(runs):
        assert torch.equal(run.output, expected), f"rank {rank}: not an exact copy"
        assert_close(pid, expected, run.output, W, f"rank {rank}")
        assert_differs(pid, expected, torch.zeros_like(expected), W, f"rank {rank} zeros")
        if W > 1:
            assert_differs(pid, expected, xs[rank].repeat(W, 1), W, f"rank {rank} own shard replicated")
            assert_differs(pid, expected, xs[rank], W, f"rank {rank} input unchanged")
    return xs, expected
