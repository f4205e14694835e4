import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

PID = 58


def siglip_terms(image, texts, rank, scale, bias):
    """Per-text-block losses of one rank, float64: the positive block (own texts) and the negative-only ones."""
    out = {}
    for j, text in enumerate(texts):
        z = scale * image.double() @ text.double().T + bias
        labels = 2 * torch.eye(len(image), dtype=torch.float64) - 1 if j == rank else -torch.ones_like(z)
        out[j] = -torch.nn.functional.logsigmoid(labels * z).sum() / len(image)
    return out


@pytest.mark.parametrize("W", [1, 2, 3, 4])
@pytest.mark.parametrize("seed", [1, 2])
def test_reference_matches_full_sigmoid_loss(W, seed):
    if W == 3 and seed == 2:
        pytest.skip("one W = 3 world is enough")
    runs = run_reference(PID, W, M=64 * W, N=96, seed=seed)  # B_local = 64
    scale, bias = runs[0].inputs[2:4]
    assert (scale, bias, runs[0].inputs[4]) == (10.0, -10.0, None)
    texts = [run.inputs[1] for run in runs]
    for rank, run in enumerate(runs):
        assert run.output.shape == () and run.output.dtype == torch.bfloat16
        terms = siglip_terms(run.inputs[0], texts, rank, scale, bias)
        total = sum(terms.values())
        assert_close(PID, total.to(torch.bfloat16), run.output, W, f"rank {rank}, float64")
        # The spec's own arithmetic: bf16 terms added in bf16 in the order own, +1, -1, +2, -2, ..., antipodal.
        order = [rank] + [(rank + s * m) % W for m in range(1, (W - 1) // 2 + 1) for s in (1, -1)]
        order += [(rank - W // 2) % W] if (W - 1) % 2 else []
        assert sorted(order) == list(range(W))
        acc = torch.zeros((), dtype=torch.bfloat16)
        for j in order:
            acc = acc + terms[j].to(torch.bfloat16)
        assert_close(PID, acc, run.output, W, f"rank {rank}, bf16 sequential")
        assert_differs(PID, run.output, torch.zeros_like(run.output), W, "zeros")
        if W > 1:
            assert_differs(PID, run.output, terms[rank].to(torch.bfloat16), W, f"no communication, rank {rank}")
            missing = total - terms[order[-1]]  # the last exchange (antipodal or -m) skipped
            assert_differs(PID, run.output, missing.to(torch.bfloat16), W, f"one term missing, rank {rank}")
