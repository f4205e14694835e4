import pytest
import torch

import problems
from problems.base import InputContext
from problems.p27_moe_all2all_primitive import make_inputs
from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


@pytest.mark.parametrize("W,seed", [(1, 0), (2, 0), (4, 0), (4, 17), (8, 17)])
def test_reference_is_a_block_transpose_of_row_chunks(W, seed):
    M, N = 64, 24
    runs = run_reference(27, W, M=M, N=N, seed=seed)
    c = M // W
    for rank, run in enumerate(runs):
        x, send, recv, group = run.inputs
        assert send == recv == [c] * W and group is None
        expected = torch.cat([runs[src].inputs[0][rank * c : (rank + 1) * c] for src in range(W)])
        assert torch.equal(run.output, expected), f"rank {rank}"
        assert_close(27, run.output, expected, W, f"rank {rank}")
        assert_differs(27, run.output, torch.zeros_like(expected), W, "zeros")
        if W > 1:
            assert_differs(27, run.output, x, W, "input unchanged (no communication)")


def test_builder_refuses_splits_that_disagree_across_ranks():
    with pytest.raises(ValueError):
        make_inputs(InputContext(rank=0, world_size=3, M=64, N=8))


def test_world_size_rule_is_the_specs_at_the_default_M():
    allows = problems.get(27).allows_world_size
    assert [W for W in range(1, 17) if allows(W)] == [1, 2, 4, 8, 16]
