import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference, run_world

M, N = 48, 40


@pytest.mark.parametrize("seed", [6, 21])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_root_gets_sum_and_others_keep_their_input(W, seed):
    runs = run_reference(4, W, M=M, N=N, seed=seed)
    assert all(run.inputs[1] == 0 and type(run.inputs[1]) is int for run in runs), "dst is the int 0"
    # Independent: float64 sum of every rank's input (exact for these integers) on the root, own input elsewhere.
    total = sum(run.inputs[0].double() for run in runs).to(torch.bfloat16)
    for rank, run in enumerate(runs):
        expected = total if rank == 0 else run.inputs[0]
        assert torch.equal(run.output, expected), f"rank {rank}: not exact"
        assert_close(4, run.output, expected, W, f"rank {rank}")
        assert_differs(4, run.output, torch.zeros_like(expected), W, f"rank {rank} zeros")
    if W > 1:
        assert_differs(4, runs[0].output, runs[0].inputs[0], W, "root returns its input (no communication)")
        assert_differs(4, runs[1].output, total, W, "non-root returns the sum (an all-reduce)")


def test_inputs_are_not_modified():
    def body(rank, W):
        import problems
        from problems.base import InputContext

        problem = problems.get(4)
        inputs = problem.make_inputs(InputContext(rank=rank, world_size=W, M=8, N=8, seed_base=1, problem_id=4))
        before = inputs[0].clone()
        problem.solution(*inputs)
        return torch.equal(inputs[0], before)

    assert all(run_world(body, 4))
