"""The gated delta-rule recurrence shared by problems 74 (Kimi Delta Attention) and 75 (Gated DeltaNet).

Both are the same sequential state update, differing only in the decay (one value per key channel in KDA, one scalar
per head in Gated DeltaNet) and in how the gate inputs are turned into it, which each problem does itself.
"""

import torch


@torch.no_grad()
def gated_delta_rule(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, decay: torch.Tensor, beta: torch.Tensor
) -> torch.Tensor:
    """Run the recurrence in fp32 over the whole sequence; returns fp32 (B, T, H, V).

    q, k: (B, T, H, K), already normalized and scaled; v: (B, T, H, V); beta: (B, T, H);
    decay: (B, T, H, K) per key channel, or (B, T, H, 1) for one scalar per head.
    For t = 0..T-1:  S <- diag(decay_t) S;  u = (v_t - k_t^T S) * beta_t;  S <- S + k_t u^T;  o_t = q_t^T S.
    """
    q, k, v, decay, beta = (x.float() for x in (q, k, v, decay, beta))
    B, T, H, K = k.shape
    state = torch.zeros(B, H, K, v.shape[-1], dtype=torch.float32, device=v.device)
    out = torch.empty(B, T, H, v.shape[-1], dtype=torch.float32, device=v.device)
    for t in range(T):
        k_t = k[:, t]
        state = state * decay[:, t].unsqueeze(-1)
        predicted = torch.einsum("bhk,bhkv->bhv", k_t, state)
        update = (v[:, t] - predicted) * beta[:, t].unsqueeze(-1)
        state = state + k_t.unsqueeze(-1) * update.unsqueeze(-2)
        out[:, t] = torch.einsum("bhk,bhkv->bhv", q[:, t], state)
    return out
