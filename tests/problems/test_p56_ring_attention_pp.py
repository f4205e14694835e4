import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.problems.ring_attention_oracle import assert_attention_arguments, attention_block
from tests.world import run_reference

PID = 56


@pytest.mark.parametrize("W", [1, 2, 4])
@pytest.mark.parametrize("seed", [1, 2])
def test_reference_matches_two_stage_pipeline(W, seed):
    pp, cp = min(2, W), W // min(2, W)
    M, N = (128, 256) if seed == 1 else (64, 512)
    runs = run_reference(PID, W, M=M, N=N, seed=seed)
    assert_attention_arguments(runs, W, inner=cp)  # CP groups of consecutive ranks, PP groups strided by cp
    for rank, run in enumerate(runs):
        assert torch.equal(run.inputs[0], runs[rank % cp].inputs[0]), "both stages hold the same hidden_states"
    h = torch.cat([runs[c].inputs[0] for c in range(cp)], dim=1)
    S = runs[0].inputs[0].shape[1]
    stage_out = [attention_block(h, runs[0].inputs[1], runs[0].inputs[2])]
    if pp == 2:
        # Stage 1 sees stage 0's bf16 output, as the pipeline sends it.
        stage_out.append(attention_block(stage_out[0].to(torch.bfloat16), runs[cp].inputs[1], runs[cp].inputs[2]))
    for rank, run in enumerate(runs):
        c, p = rank % cp, rank // cp
        expected = stage_out[p][:, c * S : (c + 1) * S].to(torch.bfloat16)
        assert expected.float().std() > 0.2
        assert_close(PID, expected, run.output, W, f"rank {rank} (stage {p})")
        assert_differs(PID, run.output, torch.zeros_like(run.output), W, "zeros")
        assert_differs(PID, run.output, run.inputs[0], W, "inputs unchanged")
        if W > 1 and (p > 0 or c > 0):
            # No communication: the rank's own block through its own stage only.
            own = attention_block(run.inputs[0], run.inputs[1], run.inputs[2]).to(torch.bfloat16)
            assert_differs(PID, run.output, own, W, f"no communication, rank {rank}")
