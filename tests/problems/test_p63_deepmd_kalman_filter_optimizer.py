import copy

import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import run_reference

PID = 63


def kalman(runs, local_s_of=None):
    """Independent batched LKF step from all ranks' inputs: (all updated weights, per-rank updated P, lambda_next).

    With local_s_of=r, rank r's own innovation scalar replaces the all-reduced one (a no-communication answer)."""
    lam, nue = runs[0].inputs[4], runs[0].inputs[5]
    Hs = [torch.stack(run.inputs[0]) for run in runs]  # (8, L, 1) per rank
    Ps = [torch.stack(run.inputs[3]) for run in runs]  # (8, L, L)
    terms = [(lam + (H.transpose(1, 2) @ P @ H).squeeze()).sum() for H, P in zip(Hs, Ps, strict=True)]
    s = terms[local_s_of] if local_s_of is not None else sum(terms)
    weights, new_P = [], []
    for run, H, P in zip(runs, Hs, Ps, strict=True):
        K = P @ H
        weights += list(torch.stack(run.inputs[2]) + run.inputs[1] * K / s)
        new_P.append(list((P - K @ K.transpose(1, 2) / s) / lam))
    return weights, new_P, torch.tensor(nue * lam + 1 - nue, dtype=torch.float64)


def with_identity_P(runs):
    """The same inputs with every P replaced by the identity (what PKB drew): K = h."""
    fake = copy.deepcopy(runs)
    for run in fake:
        run.inputs = run.inputs[:3] + ([torch.eye(len(p), dtype=p.dtype) for p in run.inputs[3]],) + run.inputs[4:]
    return fake


@pytest.mark.parametrize("W, seed", [(1, 1), (2, 2), (4, 3), (2, 4)])
def test_reference_matches_batched_update(W, seed):
    runs = run_reference(PID, W, seed=seed)
    weights, new_P, lam_next = kalman(runs)
    assert abs(lam_next.item() - 0.980026) < 1e-12
    for r, run in enumerate(runs):
        assert len(run.output[0]) == 8 * W and len(run.output[1]) == 8
        assert_close(PID, run.output, (weights, new_P[r], lam_next), W, f"rank {r}")

    r = W - 1
    output = runs[r].output
    zeros = ([torch.zeros_like(t) for t in weights], [torch.zeros_like(t) for t in new_P[r]], lam_next)
    assert_differs(PID, output, zeros, W, "zeros")
    unchanged = [w for other in runs for w in other.inputs[2]]
    assert_differs(PID, output, (unchanged, runs[r].inputs[3], lam_next), W, "inputs unchanged")
    # PKB's check passed this: P only rescaled by 1/lambda, weights gathered without their update.
    rescaled = [p / runs[r].inputs[4] for p in runs[r].inputs[3]]
    assert_differs(PID, output, (unchanged, rescaled, lam_next), W, "update skipped")
    w_id, P_id, _ = kalman(with_identity_P(runs))
    assert_differs(
        PID,
        output,
        (
            w_id,
            [
                p + (q - torch.eye(len(q), dtype=q.dtype)) / runs[r].inputs[4]
                for p, q in zip(P_id[r], runs[r].inputs[3], strict=True)
            ],
            lam_next,
        ),
        W,
        "K = h",
    )
    if W > 1:
        w_local, P_local, _ = kalman(runs, local_s_of=r)
        assert_differs(PID, output, (w_local, P_local[r], lam_next), W, "no communication (local s)")
