import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.problems.test_p40_ddp import adam, gradients
from tests.world import run_reference

M, N = 64, 128  # d_in = 128, hidden = 64, d_out = 32: P = 10336; at W = 4 shard 3 spans W1, b1, W2 and b2


def independent_zero_step(runs, dtype, ring_start=0):
    """Full-vector Adam on the averaged global gradient, then each rank's slice of the moments.

    Rank 0's parameters, the moment shards of all ranks concatenated, every rank's batch; gradients by manual
    backprop in ``dtype``, summed over ranks in ring order from ``ring_start`` (in ``dtype``).
    """
    W = len(runs)
    params = runs[0].inputs[2:6]
    per_rank = [torch.cat([g.reshape(-1) for g in gradients(*run.inputs[:2], *params, dtype)]) for run in runs]
    acc = per_rank[ring_start]
    for s in range(1, W):
        acc = (acc + per_rank[(ring_start + s) % W]).to(dtype)
    flat = torch.cat([p.reshape(-1) for p in params]).to(dtype)
    m0 = torch.cat([run.inputs[6] for run in runs]).to(dtype)
    v0 = torch.cat([run.inputs[7] for run in runs]).to(dtype)
    new, m, v = adam(flat, acc / W, m0, v0, *runs[0].inputs[8:13])
    new, m, v = (t.to(torch.bfloat16) for t in (new, m, v))
    pieces, offset = [], 0
    for p in params:
        pieces.append(new[offset : offset + p.numel()].view(p.shape))
        offset += p.numel()
    part = flat.numel() // W
    return [(*pieces, m[r * part : (r + 1) * part], v[r * part : (r + 1) * part]) for r in range(W)]


def _no_communication(problem_id):
    def run(*inputs):
        import problems
        from evaluator.nulls import no_communication

        with no_communication():
            return problems.get(problem_id).solution(*inputs)

    return run


def check_zero_problem(problem_id, W, seed):
    runs = run_reference(problem_id, W, M=M, N=N, seed=seed, trial=seed)
    part = 10336 // W
    for rank, run in enumerate(runs):
        assert [tuple(t.shape) for t in run.inputs[:8]] == [
            (64 // W, 128),
            (64 // W, 32),
            (64, 128),
            (64,),
            (32, 64),
            (32,),
            (part,),
            (part,),
        ]
        assert run.inputs[8:12] == (0.1, 0.9, 0.999, 1e-8) and run.inputs[12] == 1 + seed % 7
        if rank:
            assert not any(t.any() for t in run.inputs[2:6])  # rank 0's parameters must win
    expected = [independent_zero_step(runs, torch.float32)]
    expected += [independent_zero_step(runs, torch.bfloat16, s) for s in range(W)]
    for rank, run in enumerate(runs):
        assert len(run.output) == 6
        for e in expected:
            assert_close(problem_id, run.output, e[rank], W, f"rank {rank}")
        out = run.output
        assert_differs(problem_id, out, tuple(torch.zeros_like(t) for t in out), W, f"rank {rank} zeros")
        assert_differs(problem_id, out, out[:4] + tuple(run.inputs[6:8]), W, f"rank {rank} moments not updated")
        assert_differs(problem_id, out, tuple(runs[0].inputs[2:6]) + out[4:], W, f"rank {rank} params not updated")
    if W > 1:
        local = run_reference(problem_id, W, M=M, N=N, seed=seed, trial=seed, solution=_no_communication(problem_id))
        for rank in range(W):
            assert_differs(problem_id, runs[rank].output, local[rank].output, W, f"rank {rank} no communication")


@pytest.mark.parametrize("seed", [15, 46])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_matches_independent_step(W, seed):
    check_zero_problem(41, W, seed)


def test_world_size_rule():
    import problems
    from problems._dp_adam import shardable_hidden

    assert [W for W in range(1, 13) if problems.get(41).allows_world_size(W)] == [1, 2, 4, 5, 7, 8, 10, 11]
    assert shardable_hidden(128, 64, 32, 3) == 65  # grows: 64 * 161 + 32 = 10336 is not divisible by 3
    with pytest.raises(RuntimeError, match="divisible by W = 3"):
        run_reference(41, 3, M=M, N=1024)
