import pytest
import torch
import torch.nn.functional as F

from tests.problems.helpers import assert_close, assert_differs
from tests.problems.test_p31_fused_moe_fwd import closed_form
from tests.world import run_reference

M, N = 64, 96


def lora_mlp_fp32(gate_proj, up_proj, down_proj, gA, gB, uA, uB, dA, dB, lora=True):
    """Rank q's LoRA expert in fp32, with each LoRA pair merged into its base weight (W + B A): an independent
    arithmetic. ``lora=False`` drops the adapters (a wrong answer)."""

    def merged(m, A, B):
        weight = m.weight.float() + (B.float() @ A.float() if lora else 0)
        return lambda t: t @ weight.T + m.bias.float()

    gate, up, down = merged(gate_proj, gA, gB), merged(up_proj, uA, uB), merged(down_proj, dA, dB)
    return lambda z: down(F.silu(gate(z)) * up(z))


@pytest.mark.parametrize("seed", [12, 41])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_matches_closed_form(W, seed):
    runs = run_reference(32, W, M=M, N=N, seed=seed)
    experts = [lora_mlp_fp32(*run.inputs[3:12]) for run in runs]
    for rank, run in enumerate(runs):
        x, gate_weight, gate_bias = run.inputs[:3]
        assert [tuple(t.shape) for t in run.inputs[6:12]] == [(8, N), (128, 8), (8, N), (128, 8), (8, 128), (N, 8)]
        assert run.inputs[12:] == (8, 2, None)
        expected = closed_form(x, gate_weight, gate_bias, experts, W)
        assert_close(32, run.output, expected, W, f"rank {rank}")
        assert_close(32, expected, run.output, W, f"rank {rank}")
        assert_differs(32, run.output, torch.zeros_like(expected), W, f"rank {rank} zeros")
        assert_differs(32, run.output, x, W, f"rank {rank} input unchanged")
        no_lora = [lora_mlp_fp32(*r.inputs[3:12], lora=False) for r in runs]
        assert_differs(32, run.output, closed_form(x, gate_weight, gate_bias, no_lora, W), W, f"rank {rank} no LoRA")
        top1 = closed_form(x, gate_weight, gate_bias, experts, W, top=1)
        assert_differs(32, run.output, top1, W, f"rank {rank} top-1 only")
        if W > 1:
            local = closed_form(x, gate_weight, gate_bias, [experts[rank]] * W, W)
            assert_differs(32, run.output, local, W, f"rank {rank} own expert for every token (no communication)")
