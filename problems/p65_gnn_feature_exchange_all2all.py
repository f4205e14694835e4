"""65 gnn_feature_exchange_all2all: cooperative-minibatch feature exchange (gather by inverse ids, then GraphBolt's
rank-shifted all_to_all).

Interface as PKB: ``solution(local_features (S, hid) D, seed_inverse_ids (T,) i64, counts_sent [R]*W,
counts_received [R]*W, group=None) -> out (sum(counts_sent), hid) D``. G = local_features[seed_inverse_ids] is split
by counts_received, out by counts_sent, and list position i of both refers to peer (r + i) mod W, so
out_r[chunk i] = G_{(r+i) mod W}[chunk (-i) mod W]. R = max(64, min(M // W, 1024)), hid = max(8, min(N, 128)),
T = R W, S = max(1, 3T // 4); features standard normal, ids uniform in [0, S) (with repeats).

Decisions (spec Pitfalls):
- Pure data movement, so the answer is bit-exact and the default tolerances are meaningful; a plain (unshifted)
  all_to_all, zeros, or the rank's own gathered rows G (no communication, same shape) all fail for W >= 2.
- The chunk sizes are equal (as PKB), so counts_sent and counts_received cannot be told apart; we keep the roles.
"""

import torch

from problems._graphbolt_all_to_all import rank_shifted_all_to_all
from problems.base import InputContext, Problem


def sizes(ctx: InputContext) -> tuple[int, int, int]:
    R = max(64, min(ctx.M // ctx.world_size, 1024))
    return R, max(8, min(ctx.N, 128)), R * ctx.world_size


def make_inputs(ctx: InputContext):
    R, hid, T = sizes(ctx)
    S = max(1, 3 * T // 4)
    ctx.seed(ctx.rank)
    local_features = torch.randn(S, hid, dtype=ctx.dtype, device=ctx.device)
    seed_inverse_ids = torch.randint(0, S, (T,), device=ctx.device)
    return local_features, seed_inverse_ids, [R] * ctx.world_size, [R] * ctx.world_size, None


@torch.no_grad()
def solution(local_features, seed_inverse_ids, counts_sent, counts_received, group=None):
    gathered = local_features[seed_inverse_ids]
    out = gathered.new_empty(sum(counts_sent), gathered.shape[1])
    rank_shifted_all_to_all(list(out.split(counts_sent)), list(gathered.split(counts_received)), group)
    return out


PROBLEM = Problem(id=65, make_inputs=make_inputs, solution=solution)
