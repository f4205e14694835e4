import pytest
import torch

from tests.problems.fp8_oracle import fp8_round_trip
from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

PID = 53


@pytest.mark.parametrize("W", [1, 2, 4])
@pytest.mark.parametrize("seed", [1, 2])
def test_reference_matches_independent_fp8_all_gather(W, seed):
    M = 64 if seed == 1 else 1  # M = 1 gives the minimum shard length, 64
    runs = run_reference(PID, W, M=M, N=64, seed=seed)
    P = max(64, min(64 * M, 4096))
    history = runs[0].inputs[1]
    assert runs[0].inputs[0].shape == (P,) and all(torch.equal(r.inputs[1], history) for r in runs)
    blocks = [fp8_round_trip(run.inputs[0], history)[:2] for run in runs]  # (reconstruction, new history)
    full = torch.cat([recon for recon, _ in blocks])
    for rank, run in enumerate(runs):
        assert_close(PID, (full, blocks[rank][1]), run.output, W, f"rank {rank}")
        assert torch.equal(run.output[0], full) and torch.equal(run.output[1], blocks[rank][1])
        assert_differs(PID, run.output, tuple(torch.zeros_like(t) for t in run.output), W, "zeros")
        raw = torch.cat([r.inputs[0] for r in runs])
        assert_differs(PID, run.output, (raw, blocks[rank][1]), W, "no fp8 round trip (inputs unchanged)")
        if W > 1:
            assert_differs(PID, run.output, (blocks[rank][0].repeat(W), blocks[rank][1]), W, "no communication")
