import pytest
import torch
import torch.nn.functional as F

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

M, N = 64, 96


def mlp_fp32(gate_proj, up_proj, down_proj):
    """Rank q's expert in fp32 from its bf16 parameters (no intermediate rounding): an independent arithmetic."""

    def f(z):
        lin = lambda m, t: t @ m.weight.float().T + m.bias.float()  # noqa: E731
        return lin(down_proj, F.silu(lin(gate_proj, z)) * lin(up_proj, z))

    return f


def closed_form(x, gate_weight, gate_bias, experts, W, top=2):
    """Independent closed form in fp32: y[t] = sum over the top-2 experts e of w_e * f_owner(e)(x[t]).

    Routing from fp32 logits and an fp32 softmax (the builder keeps the top-2 set decisive, so this must agree with
    the reference's bf16 router); ``experts[q]`` is rank q's MLP; experts are hosted in blocks of 8/W.
    """
    probs = torch.softmax(x.float() @ gate_weight.float().T + gate_bias.float(), dim=-1)
    weights, ids = probs.topk(top, dim=-1)
    z = x.float()
    outputs = torch.stack([f(z) for f in experts])  # [owner, token, N]
    owner = ids // (8 // W)
    y = sum(weights[:, k : k + 1] * outputs[owner[:, k], torch.arange(len(z))] for k in range(top))
    return y.to(torch.bfloat16)


@pytest.mark.parametrize("seed", [11, 37])
@pytest.mark.parametrize("W", [1, 2, 4])
def test_reference_matches_closed_form(W, seed):
    runs = run_reference(31, W, M=M, N=N, seed=seed)
    experts = [mlp_fp32(*run.inputs[3:6]) for run in runs]
    for rank, run in enumerate(runs):
        x, gate_weight, gate_bias = run.inputs[:3]
        assert run.inputs[6:] == (8, 2, None) and gate_bias.shape == (8,)
        assert run.output.shape == (M, N) and run.output.dtype == torch.bfloat16
        expected = closed_form(x, gate_weight, gate_bias, experts, W)
        assert_close(31, run.output, expected, W, f"rank {rank}")
        assert_close(31, expected, run.output, W, f"rank {rank}")
        assert_differs(31, run.output, torch.zeros_like(expected), W, f"rank {rank} zeros")
        assert_differs(31, run.output, x, W, f"rank {rank} input unchanged")
        # The second expert carries weight: dropping it fails.
        top1 = closed_form(x, gate_weight, gate_bias, experts, W, top=1)
        assert_differs(31, run.output, top1, W, f"rank {rank} top-1 only")
        if W > 1:
            local = closed_form(x, gate_weight, gate_bias, [experts[rank]] * W, W)
            assert_differs(31, run.output, local, W, f"rank {rank} own expert for every token (no communication)")


def test_builder_keeps_routing_decisive():
    from problems._moe_ep import router_margin_ok

    for run in run_reference(31, 2, M=256, N=N, seed=5):
        assert router_margin_ok(*run.inputs[:3]).all()
