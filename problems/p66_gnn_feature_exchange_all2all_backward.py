"""66 gnn_feature_exchange_all2all_backward: backward of the cooperative feature exchange (GraphBolt's
rank-shifted all_to_all, then a scatter-add by inverse ids).

Interface as PKB: ``solution(grad_output (T, hid) f32, seed_inverse_ids (T,) i64, seed_size S, counts_sent [R]*W,
counts_received [R]*W, group=None) -> (S, hid) f32``. recv is split by counts_received, grad_output by counts_sent,
list position i refers to peer (r + i) mod W, so recv_r[chunk i] = grad_output_{(r+i) mod W}[chunk (-i) mod W];
then result[s] = sum of recv[t] over t with seed_inverse_ids[t] = s (a sparse COO matrix of ones times recv, as
PKB). R = max(64, min(M // W, 1024)), hid = max(8, min(N, 128)), T = R W, S = max(1, T // 2).

Decisions (spec Pitfalls):
- grad_output is float32 whatever the dtype argument (as PKB). The float32 summation order of the scatter-add is
  free (differences ~1e-6 against atol = rtol = 1e-2), so the default tolerances are meaningful.
- The inverse ids index the RECEIVED rows; a scatter-add of the rank's own grad_output (no communication, same
  shape) fails for W >= 2, and so do zeros.
"""

import torch

from problems._graphbolt_all_to_all import rank_shifted_all_to_all
from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    R = max(64, min(ctx.M // ctx.world_size, 1024))
    hid = max(8, min(ctx.N, 128))
    T = R * ctx.world_size
    S = max(1, T // 2)
    ctx.seed(ctx.rank)
    grad_output = torch.randn(T, hid, dtype=torch.float32, device=ctx.device)
    seed_inverse_ids = torch.randint(0, S, (T,), device=ctx.device)
    return grad_output, seed_inverse_ids, S, [R] * ctx.world_size, [R] * ctx.world_size, None


@torch.no_grad()
def solution(grad_output, seed_inverse_ids, seed_size, counts_sent, counts_received, group=None):
    recv = grad_output.new_empty(sum(counts_received), grad_output.shape[1])
    rank_shifted_all_to_all(list(recv.split(counts_received)), list(grad_output.split(counts_sent)), group)
    T = recv.shape[0]
    indices = torch.stack([seed_inverse_ids, torch.arange(T, device=recv.device)])
    ones = torch.ones(T, dtype=recv.dtype, device=recv.device)
    scatter = torch.sparse_coo_tensor(indices, ones, (seed_size, T))
    return torch.sparse.mm(scatter, recv)


PROBLEM = Problem(id=66, make_inputs=make_inputs, solution=solution)
