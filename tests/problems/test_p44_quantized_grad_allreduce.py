import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


def quant_dequant(x, block_size):
    """Independent: x * (127 / amax) per block (the other formulation), round half to even, clamp, back to fp64."""
    n = x.numel()
    padded = torch.zeros(-(-n // block_size) * block_size, dtype=torch.float64)
    padded[:n] = x.double()
    blocks = padded.view(-1, block_size)
    amax = blocks.abs().amax(dim=1, keepdim=True).clamp_min(1e-8)
    q = torch.round(blocks * (127 / amax)).clamp(-127, 127)
    return (q * (amax / 127)).reshape(-1)[:n]


@pytest.mark.parametrize("W", [1, 2, 4])
@pytest.mark.parametrize("M, N, seed", [(16, 256, 20), (5, 66, 51)])  # block 64; block 16 with a padded last block
def test_reference_matches_independent_mean(W, M, N, seed):
    runs = run_reference(44, W, M=M, N=N, seed=seed)
    n = max(M * N, 64 * W)
    block_size = min(128, max(16, N // 4))
    xs = [run.inputs[0] for run in runs]
    for run in runs:
        assert run.inputs[0].shape == (n,) and run.inputs[1] == block_size
    dequantized = [quant_dequant(x, block_size) for x in xs]
    expected = (sum(dequantized) / W).to(torch.bfloat16)
    plain_mean = (sum(x.double() for x in xs) / W).to(torch.bfloat16)
    for rank, run in enumerate(runs):
        assert torch.equal(run.output, expected), f"rank {rank}: not bit-identical"  # exact arithmetic by design
        assert_close(44, run.output, expected, W, f"rank {rank}")
        assert_differs(44, run.output, torch.zeros_like(expected), W, f"rank {rank} zeros")
        assert_differs(44, run.output, plain_mean, W, f"rank {rank} without quantization")
        assert_differs(44, run.output, xs[rank], W, f"rank {rank} input unchanged")
        if W > 1:
            own = dequantized[rank].to(torch.bfloat16)
            assert_differs(44, run.output, own, W, f"rank {rank} own gradient (no communication)")


def test_builder_makes_block_scales_powers_of_two_without_ties():
    from problems.base import InputContext
    from problems.p44_quantized_grad_allreduce import make_inputs

    x, block_size = make_inputs(InputContext(rank=1, world_size=8, M=64, N=512, problem_id=44, seed_base=3))
    blocks = x.float().view(-1, block_size)
    amax = blocks.abs().amax(dim=1)
    exponent = torch.log2(127 / amax)
    assert torch.equal(exponent, exponent.round()) and set(exponent.round().int().tolist()) == {3, 4, 5}
    scaled = blocks * (2.0 ** exponent.round()).unsqueeze(1)
    assert not ((scaled - scaled.floor()) == 0.5).any()
