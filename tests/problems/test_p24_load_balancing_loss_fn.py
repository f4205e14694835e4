import pytest
import torch

from problems.p24_load_balancing_loss_fn import load_balancing_loss
from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference


def aux_loss(logits, E=8, k=2):
    """Independent HF-style loss: probabilities rounded to the logits' dtype, counts by loop, float64 sums."""
    p = torch.softmax(logits.double(), dim=-1).to(logits.dtype)
    chosen = p.double().argsort(dim=-1, descending=True, stable=True)[:, :k]
    f = torch.tensor([[(chosen[:, slot] == e).double().mean().item() for e in range(E)] for slot in range(k)])
    return E * (f * p.double().mean(dim=0)).sum().item()


@pytest.mark.parametrize("W,seed", [(1, 0), (2, 0), (2, 2), (4, 2)])
def test_reference_matches_mean_of_rank_losses(W, seed):
    M = 256
    runs = run_reference(24, W, M=M, N=64, seed=seed)
    for run in runs:
        logits, E, k, mask = run.inputs
        assert logits.shape == (M, 8) and logits.dtype == torch.bfloat16 and (E, k, mask) == (8, 2, None)
    locals_ = [aux_loss(run.inputs[0]) for run in runs]
    expected = torch.tensor(sum(locals_) / W, dtype=torch.float32)
    for rank, run in enumerate(runs):
        assert run.output.dtype == torch.float32 and run.output.dim() == 0
        assert_close(24, run.output, expected, W, f"rank {rank}")
    assert_differs(24, expected, torch.zeros(()), W, "zeros")
    assert_differs(24, expected, torch.tensor(2.0), W, "balanced-router constant")
    if W > 1:
        assert_differs(24, expected, torch.tensor(sum(locals_)), W, "sum instead of mean")
        assert any(abs(loc - expected.item()) > 0.03 * expected.item() for loc in locals_)
        for rank in range(W):
            assert_differs(24, expected, torch.tensor(locals_[rank] / W), W, f"rank {rank} without all-reduce")


def test_unexercised_branches_agree_with_the_tensor_path():
    torch.manual_seed(1)
    logits = torch.randn(2 * 3 * 5, 8).bfloat16()  # 2 layers, batch 3, sequence 5
    plain = load_balancing_loss(logits, 8, 2)
    assert torch.allclose(load_balancing_loss((logits[:15], logits[15:]), 8, 2), plain)
    assert torch.allclose(load_balancing_loss(logits, 8, 2, torch.ones(3, 5, dtype=torch.long)), plain, rtol=1e-2)
    mask = torch.ones(3, 5, dtype=torch.long)
    mask[:, 3:] = 0  # padding: only positions 0..2 of each sequence count
    kept = logits.view(2, 3, 5, 8)[:, :, :3].reshape(-1, 8)
    assert torch.allclose(load_balancing_loss(logits, 8, 2, mask), load_balancing_loss(kept, 8, 2), rtol=1e-2)
