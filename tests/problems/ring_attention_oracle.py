"""Independent float64 attention and the group layout checks shared by the two-level ring attention problems
(p55: TP x CP, p56: CP x PP)."""

import torch

from tests.world import GroupRef


def attention_heads(x, w_qkv, heads):
    """Causal attention of the whole sequence x (B, S, 512) for the heads in w_qkv, float64: (B, S, heads*64)."""
    B, S, _ = x.shape
    qkv = (x.double() @ w_qkv.double().T).view(B, S, 3, heads, 64).permute(2, 0, 3, 1, 4)  # (3, B, H, S, 64)
    scores = qkv[0] @ qkv[1].transpose(-1, -2) / 8.0
    scores = scores.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
    return (scores.softmax(-1) @ qkv[2]).transpose(1, 2).reshape(B, S, heads * 64)


def attention_block(x, w_qkv, w_o, heads=8):
    """Causal self-attention block (QKV projection, attention, output projection) over the whole sequence x
    (B, S, 512) for the heads in w_qkv and w_o, float64, no residual."""
    return attention_heads(x, w_qkv, heads) @ w_o.double().T


def assert_attention_arguments(runs, W, inner):
    """Every rank is passed num_heads = 8, softmax_scale = None, causal = True; its first group (inputs[6]) is its
    block of ``inner`` consecutive ranks, its second (inputs[7]) the ranks at its place (rank % inner) in every
    block."""
    for rank, run in enumerate(runs):
        place, block = rank % inner, rank // inner
        assert run.inputs[3:6] == (8, None, True)
        assert run.inputs[6] == GroupRef(tuple(range(block * inner, (block + 1) * inner)))
        assert run.inputs[7] == GroupRef(tuple(range(place, W, inner)))
