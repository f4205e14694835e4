import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.problems.test_p82_vocab_parallel_log_prob_topk import gather_rows, kept_tokens
from tests.world import run_reference


def full_gradient(rows, target, grad_output):
    """Independent gradient (T, V): autograd of sum_t g_t log p_t(target_t) over each row's kept tokens.

    A filtered-out target has no log-prob; the spec's formula (onehot - p) * g * keep then gives -p * g on the kept
    tokens and 0 at the target.
    """
    grads = torch.zeros(rows.shape, dtype=torch.float32)
    for n, row in enumerate(rows):
        ids = kept_tokens(row)
        token, g = int(target.reshape(-1)[n]), float(grad_output.reshape(-1)[n])
        if token not in ids.tolist():
            grads[n, ids] = -torch.softmax(row.float()[ids], 0) * g
            continue
        x = row.float()[ids].clone().requires_grad_(True)
        loss = g * torch.log_softmax(x, 0)[ids.tolist().index(token)]
        loss.backward()
        grads[n, ids] = x.grad
    return grads


@pytest.mark.parametrize("W,M,seed", [(1, 1024, 3), (2, 1024, 3), (4, 2048, 8)])
def test_reference_matches_autograd(W, M, seed):
    runs = run_reference(84, W, M=M, seed=seed, trial=3)
    logits, target, grad_output = runs[0].inputs[:3]
    B, S, Vl = logits.shape
    assert grad_output.dtype == torch.bfloat16 and grad_output.reshape(-1)[0] == -1
    grads = full_gradient(gather_rows(runs), target, grad_output).view(B, S, 256)
    assert (grads.abs() > 0.05).sum() > B * S  # several kept tokens per row, not an all-zero gradient
    for rank, run in enumerate(runs):
        assert run.output.dtype == torch.float32
        assert_close(84, run.output, grads[..., rank * Vl : (rank + 1) * Vl], W, f"rank {rank}")

    out = runs[-1].output
    assert_differs(84, out, torch.zeros_like(out), W, "zeros")
    if W > 1:
        # Without communication: the rank's own shard taken as the whole vocabulary.
        shard = runs[-1].inputs[0].reshape(B * S, Vl)
        alone = torch.zeros(B * S, Vl)
        for n, t in enumerate(target.reshape(-1).tolist()):
            ids = kept_tokens(shard[n], top_k=min(10, Vl))
            local = t - (W - 1) * Vl
            p = torch.zeros(Vl)
            p[ids] = torch.softmax(shard[n].float()[ids], 0)
            onehot = torch.zeros(Vl)
            if local in ids.tolist():
                onehot[local] = 1
            mask = torch.zeros(Vl)
            mask[ids] = 1
            alone[n] = (onehot - p) * float(grad_output.reshape(-1)[n]) * mask
        assert_differs(84, out, alone.view(B, S, Vl), W, "no communication")
