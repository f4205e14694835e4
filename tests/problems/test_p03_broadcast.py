import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference, run_world

M, N = 40, 56


@pytest.mark.parametrize("seed", [3, 17])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_every_rank_gets_rank0_tensor(W, seed):
    runs = run_reference(3, W, M=M, N=N, seed=seed)
    assert all(len(run.inputs) == 1 for run in runs), "src must not be passed"
    expected = runs[0].inputs[0]  # independent: broadcasting is copying rank 0's input
    for rank, run in enumerate(runs):
        assert torch.equal(run.output, expected), f"rank {rank}: not an exact copy"
        assert_close(3, run.output, expected, W, f"rank {rank}")
        assert_differs(3, run.output, torch.zeros_like(expected), W, f"rank {rank} zeros")
        assert_differs(3, run.output, torch.ones_like(expected), W, f"rank {rank} PKB's constant 1.0")
        if rank > 0:
            assert_differs(3, run.output, run.inputs[0], W, f"rank {rank} input unchanged (no communication)")


def test_inputs_are_not_modified():
    def body(rank, W):
        import problems
        from problems.base import InputContext

        problem = problems.get(3)
        (tensor,) = problem.make_inputs(InputContext(rank=rank, world_size=W, M=8, N=8, seed_base=1, problem_id=3))
        before = tensor.clone()
        out = problem.solution(tensor)
        return torch.equal(tensor, before) and out.data_ptr() != tensor.data_ptr()

    assert all(run_world(body, 2))
