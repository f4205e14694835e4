import pytest
import torch
import torch.nn.functional as F

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


def global_rows(runs, rank, image=None):
    """Rank ``rank``'s rows of a 'same' 3x3 convolution of the stacked image with that rank's own weight (fp32)."""
    x, weight = runs[rank].inputs[0], runs[rank].inputs[1]
    h = x.shape[2]
    image = torch.cat([run.inputs[0] for run in runs], dim=2) if image is None else image
    padded = F.pad(image.float(), (1, 1, 1, 1))  # zeros outside the whole image
    window = padded[:, :, rank * h : rank * h + h + 2]
    return F.conv2d(window, weight.float())


@pytest.mark.parametrize("W,seed", [(1, 3), (2, 3), (3, 10), (4, 10)])
def test_reference_matches_global_convolution(W, seed):
    runs = run_reference(87, W, N=256, seed=seed)
    h = max(3, 128 // max(1, W // 2))
    assert runs[0].inputs[0].shape == (1, 32, h, 16) and runs[0].inputs[1].shape == (32, 32, 3, 3)
    for rank, run in enumerate(runs):
        conv = global_rows(runs, rank)
        bias = run.inputs[2].view(1, -1, 1, 1)
        fused = (conv + bias.float()).to(torch.bfloat16)  # one rounding, bias in the fp32 epilogue
        split = conv.to(torch.bfloat16) + bias  # conv rounded, then the bias in bf16 (as cuDNN)
        assert_close(87, run.output, split, W, f"rank {rank}, split rounding")
        assert_close(87, run.output, fused, W, f"rank {rank}, fused bias")

    out, x, weight, bias = runs[-1].output, *runs[-1].inputs[:3]
    assert_differs(87, out, torch.zeros_like(out), W, "zeros")
    assert_differs(87, out, x, W, "x returned")
    if W > 1:
        alone = F.conv2d(x.float(), weight.float(), bias.float(), padding=1).to(torch.bfloat16)  # zero halos
        assert_differs(87, out, alone, W, "no communication")
