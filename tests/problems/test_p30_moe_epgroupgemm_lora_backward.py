import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

N = 96


def bf16_ring(parts, start):
    """An independent reduction: bf16 additions in ring order from ``start``, as NCCL's ring might do."""
    acc = parts[start]
    for step in range(1, len(parts)):
        acc = (acc + parts[(start + step) % len(parts)]).to(torch.bfloat16)
    return acc


@pytest.mark.parametrize("seed", [10, 33])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_sums_each_gradient_over_ranks(W, seed):
    runs = run_reference(30, W, N=N, seed=seed)
    for run in runs:
        assert [tuple(t.shape) for t in run.inputs[:3]] == [(8, N), (8, N), (N, 8)] and run.inputs[3] is None
        assert isinstance(run.output, tuple) and len(run.output) == 3
    for i in range(3):
        parts = [run.inputs[i] for run in runs]
        for start in range(W):
            expected = bf16_ring(parts, start)
            for rank, run in enumerate(runs):
                assert_close(30, run.output[i], expected, W, f"tensor {i}, ring from {start}, rank {rank}")
        plain = torch.stack(parts).sum(0).to(torch.bfloat16)
        assert_close(30, runs[0].output[i], plain, W, f"tensor {i} plain sum")
    out = runs[0].output
    assert_differs(30, out, tuple(torch.zeros_like(t) for t in out), W, "zeros")
    if W > 1:
        assert_differs(30, out, runs[0].inputs[:3], W, "own gradients (no communication)")
        missing = tuple(sum(run.inputs[i].float() for run in runs[1:]).to(torch.bfloat16) for i in range(3))
        assert_differs(30, out, missing, W, "sum missing rank 0")


def _in_place(rank, W):
    from problems.base import InputContext
    from problems.p30_moe_epgroupgemm_lora_backward import make_inputs, solution

    inputs = make_inputs(InputContext(rank=rank, world_size=W, N=N, problem_id=30))
    before = [t.clone() for t in inputs[:3]]
    out = solution(*inputs)
    return all(o is t for o, t in zip(out, inputs[:3], strict=True)), before, out


def test_reduction_is_in_place():
    from tests.world import run_world

    results = run_world(_in_place, 2)
    for aliased, _before, _out in results:
        assert aliased
    for i in range(3):
        expected = (results[0][1][i].float() + results[1][1][i].float()).to(torch.bfloat16)
        assert torch.equal(results[0][2][i], expected) and torch.equal(results[1][2][i], expected)
