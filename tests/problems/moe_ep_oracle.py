"""Independent oracle for the expert-parallel MoE problems (p49-p51): the MoE computed token by token, each selected
expert's MLP taken from the rank that owns it. The problems differ only in which rank owns an expert (``owner``)."""

import torch
import torch.nn.functional as F

from tests.problems.helpers import assert_close, assert_differs


def mlp(modules, x, fp32=False):
    gate, up, down = modules
    if fp32:  # an implementation keeping the expert activations in fp32

        def lin(m, v):
            return v @ m.weight.float().T + m.bias.float()

        return lin(down, F.silu(lin(gate, x.float())) * lin(up, x.float())).to(x.dtype)
    return down(F.silu(gate(x)) * up(x))


def expected_output(runs, rank, W, owner, fp32=False, local_only=False):
    """Token by token: sum_j w[t, j] * MLP_owner(sel[t, j])(x[t]), with the rank ``owner(rank, e, W)`` for expert e."""
    x, gate_w, gate_b, *modules = runs[rank].inputs[:6]
    top_k = runs[rank].inputs[7]
    probs = torch.softmax(F.linear(x, gate_w, gate_b), dim=-1)  # bf16 router: routing must match exactly
    w, sel = torch.topk(probs, top_k, dim=-1)
    out = torch.zeros_like(x)
    with torch.no_grad():
        for j in range(top_k):
            y = torch.empty_like(x)
            for e in sel[:, j].unique().tolist():
                rows = sel[:, j] == e
                host = rank if local_only else owner(rank, e, W)
                y[rows] = mlp(runs[host].inputs[3:6], x[rows], fp32)
            out = out + w[:, j : j + 1] * y
    return out


def assert_matches_token_by_token_moe(pid, runs, W, owner):
    """Every rank's output matches the oracle (bf16 or fp32 experts) and none of the null answers does."""
    for rank, run in enumerate(runs):
        assert_close(pid, expected_output(runs, rank, W, owner), run.output, W, f"rank {rank}")
        assert_close(pid, expected_output(runs, rank, W, owner, fp32=True), run.output, W, f"fp32 experts, rank {rank}")
        assert_differs(pid, run.output, torch.zeros_like(run.output), W, "zeros")
        assert_differs(pid, run.output, run.inputs[0], W, "inputs unchanged")
        if any(owner(rank, e, W) != rank for e in range(run.inputs[6])):
            assert_differs(
                pid, run.output, expected_output(runs, rank, W, owner, local_only=True), W, "no communication"
            )
