import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import GroupRef, run_reference

PID = 57


def replica_grads(blocks):
    """dq, dk, dv of one CP group, float64, from all its blocks at once; lse and out are the given local ones."""
    dout, q, k, v, out = (torch.cat([b[i] for b in blocks], dim=1).double() for i in range(5))
    lse = torch.cat([b[5] for b in blocks], dim=2).double()  # (B, H, S)

    def t(x):
        return x.transpose(1, 2)  # (B, S, H, D) -> (B, H, S, D)

    P = torch.exp(t(q) @ t(k).transpose(-1, -2) / 8.0 - lse.unsqueeze(-1))  # not normalised over remote keys
    dS = P * (t(dout) @ t(v).transpose(-1, -2) - (dout * out).sum(-1).transpose(1, 2).unsqueeze(-1))
    return t(dS @ t(k) / 8.0), t(dS.transpose(-1, -2) @ t(q) / 8.0), t(P.transpose(-1, -2) @ t(dout))


@pytest.mark.parametrize("W", [1, 2, 4, 8])
@pytest.mark.parametrize("seed", [1, 2])
def test_reference_matches_global_backward(W, seed):
    if W == 8 and seed == 2:
        pytest.skip("one W = 8 world is enough")
    dp, cp = min(2, W), W // min(2, W)
    M, N = (128, 256) if seed == 1 else (64, 512)
    runs = run_reference(PID, W, M=M, N=N, seed=seed)
    S = runs[0].inputs[0].shape[1]
    for rank, run in enumerate(runs):
        c, d = rank % cp, rank // cp
        assert run.inputs[6:8] == (None, False)
        assert run.inputs[8] == GroupRef(tuple(range(d * cp, (d + 1) * cp)))
        assert run.inputs[9] == GroupRef(tuple(range(c, W, cp)))
    # Per DP replica d: the CP group's gradients, cast to bf16; then the DP average as bf16 additions.
    grads = []
    for d in range(dp):
        g = replica_grads([runs[d * cp + c].inputs for c in range(cp)])
        grads.append([x.to(torch.bfloat16) for x in g])
    for rank, run in enumerate(runs):
        c, d = rank % cp, rank // cp
        block = slice(c * S, (c + 1) * S)
        mine = tuple(g[:, block] for g in grads[d])
        if dp == 2:
            expected = tuple((a[:, block] + b[:, block]) / 2 for a, b in zip(*grads, strict=True))
        else:
            expected = mine
        assert_close(PID, expected, run.output, W, f"rank {rank}")
        assert_differs(PID, run.output, tuple(torch.zeros_like(x) for x in run.output), W, "zeros")
        assert_differs(PID, run.output, (run.inputs[0],) * 3, W, "dout unchanged")
        if W > 1:
            own = replica_grads([run.inputs])  # own block only, no DP partner
            assert_differs(PID, run.output, tuple(x.to(torch.bfloat16) for x in own), W, f"no communication {rank}")
        if dp == 2:
            assert_differs(PID, run.output, mine, W, f"no DP average, rank {rank}")
