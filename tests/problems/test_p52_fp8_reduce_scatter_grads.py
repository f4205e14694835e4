import pytest
import torch

from problems._fp8_delayed_scaling import make_history
from problems.base import InputContext
from tests.problems.fp8_oracle import e4m3_round, fp8_round_trip
from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

PID = 52


@pytest.mark.parametrize("W", [1, 2, 4])
@pytest.mark.parametrize("seed", [1, 2])
def test_reference_matches_independent_fp8_reduce_scatter(W, seed):
    runs = run_reference(PID, W, M=64, N=64, seed=seed)
    P = 4096
    history = runs[0].inputs[1]
    assert history.dtype == torch.bfloat16 and all(torch.equal(r.inputs[1], history) for r in runs)
    recons = [fp8_round_trip(run.inputs[0], history)[0] for run in runs]
    for rank, run in enumerate(runs):
        out_shard, new_hist = run.output
        _, expected_hist, scale = fp8_round_trip(run.inputs[0], history)
        assert torch.equal(new_hist, expected_hist)
        parts = [r[rank * P : (rank + 1) * P] for r in recons]
        for start in range(W):  # bf16 additions in ring order from every start
            acc = parts[start]
            for step in range(1, W):
                acc = acc + parts[(start + step) % W]
            assert_close(PID, (acc / W, expected_hist), run.output, W, f"rank {rank}, ring from {start}")
        # Null answers: zeros, the gradient without the fp8 round trip, the rank's own shard (no reduce-scatter).
        assert_differs(PID, run.output, (torch.zeros_like(out_shard), torch.zeros_like(new_hist)), W, "zeros")
        raw = sum(r.inputs[0][rank * P : (rank + 1) * P].float() for r in runs) / W
        assert_differs(PID, run.output, (raw.to(torch.bfloat16), expected_hist), W, "no fp8 round trip")
        if W > 1:
            assert_differs(PID, run.output, (parts[rank] / W, expected_hist), W, "no communication")
        # A history that is not rotated before its max is taken: wrong whenever the dropped slot is the largest.
        stale = torch.cat([history, new_hist[-1:]]).float().max() / 448.0
        if stale != scale:
            wrong = (e4m3_round(run.inputs[0].float() / stale) * stale).to(torch.bfloat16)
            stale_parts = [wrong[rank * P : (rank + 1) * P]] + [p for s, p in enumerate(parts) if s != rank]
            assert_differs(
                PID,
                run.output,
                (sum(p.float() for p in stale_parts).bfloat16() / W, expected_hist),
                W,
                "history not rotated",
            )


def test_history_exercises_every_branch():
    """Over trials and ranks the scale comes sometimes from the new amax, sometimes from an older entry, and the
    dropped oldest entry is often the largest (so the rotation matters)."""
    amax_wins = dropped_largest = total = 0
    for seed in range(40):
        ctx = InputContext(rank=0, world_size=8, seed_base=seed, problem_id=PID)
        history = make_history(ctx, 4096 * 8)
        for rank in range(8):
            ctx.seed(rank)
            amax = torch.randn(4096 * 8).abs().max()
            amax_wins += bool(amax > history[1:].float().max())
            dropped_largest += bool(history[0] > max(history[1:].float().max(), amax))
            total += 1
    assert 0.2 < amax_wins / total < 0.8 and dropped_largest / total > 0.2
