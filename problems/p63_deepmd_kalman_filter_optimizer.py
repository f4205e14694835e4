"""63 deepmd_kalman_filter_optimizer: layer-wise Kalman filter (LKF) update with a global scalar all-reduce and a
weight all-gather.

Interface as PKB: ``solution(H, error, weights, P, kalman_lambda=0.98, kalman_nue=0.9987)`` with lists of nb = 8
float64 blocks per rank, H[i] and weights[i] (1024, 1), P[i] (1024, 1024), a 0-dim float64 error; returns
(updated weights of ALL ranks: list of 8W (1024, 1) in rank-major order, this rank's updated P: list of 8,
0-dim lambda_next = nue*lambda + 1 - nue). s = sum over ranks and blocks of (lambda + h^T P h) (lambda counted once
per block, as DeePMD), A = 1/s, K = P h, w' = w + A e K, P' = (P - A K K^T) / lambda. The caller's ``weights`` and
``P`` lists are updated in place (element i replaced), as in PKB.

Decisions (spec Pitfalls):
- PKB's check (atol = rtol = 1e-2 after a float32 cast) cannot see the update at all: the weight change is ~1e-4
  and the P change ~1e-6, so rescaling P and gathering the unchanged weights passed. Everything is float64, so we
  check at atol = 1e-8, rtol = 1e-6: float64 (or even float32) arithmetic in any order passes with a wide margin,
  while a missing update, a missing 1/lambda, or the local s instead of the all-reduced one fail.
- P is a random symmetric positive-definite matrix, I + S with S symmetric of entry std 0.01 (eigenvalues in about
  [0.4, 1.6]), instead of PKB's identity: with P = I a kernel that skips the P h product (K = h) was right.
- The dtype argument, M and N are ignored (float64, nb = 8, L = 1024, as PKB). Only with ``ctx.reduced`` (CPU
  development runs) L = 256: moving 8 (1024, 1024) float64 matrices in and out of every CPU rank takes too long.
- timed_arg = "error", PKB's timed tensor, named explicitly (the catalogue's entry is prose and would resolve
  to H, a list).
- The collectives run at W = 1 too (they are trivial); all_gather_object exchanges the block lengths as in PKB.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem

BLOCKS, LENGTH = 8, 1024
F64 = torch.float64


def make_inputs(ctx: InputContext):
    dev = ctx.device
    length = 256 if ctx.reduced else LENGTH
    ctx.seed(ctx.rank)
    H, weights, P = [], [], []
    for _ in range(BLOCKS):
        H.append(0.01 * torch.randn(length, 1, dtype=F64, device=dev))
        weights.append(torch.randn(length, 1, dtype=F64, device=dev))
    for _ in range(BLOCKS):
        noise = torch.randn(length, length, dtype=F64, device=dev) * (0.01 / 2**0.5)
        P.append(torch.eye(length, dtype=F64, device=dev) + noise + noise.T)
    error = torch.randn((), dtype=F64, device=dev)
    return H, error, weights, P, 0.98, 0.9987


@torch.no_grad()
def solution(H, error, weights, P, kalman_lambda, kalman_nue=0.9987):
    dev = weights[0].device
    lam = torch.tensor(kalman_lambda, dtype=F64, device=dev)
    nue = torch.tensor(kalman_nue, dtype=F64, device=dev)
    # 1-2. Global innovation scalar.
    s = torch.zeros(1, 1, dtype=F64, device=dev)
    for h, p in zip(H, P, strict=False):
        s = s + (lam + h.T @ (p @ h))
    dist.all_reduce(s, op=dist.ReduceOp.SUM)
    A = 1.0 / s
    # 3. Local Kalman update, replacing the caller's list elements.
    for i, (h, p) in enumerate(zip(H, P, strict=False)):
        K = p @ h
        weights[i] = weights[i] + A * error * K
        P[i] = (1.0 / lam) * (p - A * (K @ K.T))
    # 4-5. Every rank's block lengths, then every rank's updated weights.
    lengths = [None] * dist.get_world_size()
    dist.all_gather_object(lengths, [w.numel() for w in weights])
    flat = torch.cat([w.reshape(-1) for w in weights])
    gathered = [flat.new_empty(sum(sizes)) for sizes in lengths]
    dist.all_gather(gathered, flat)
    all_weights = [
        block.reshape(-1, 1) for sizes, vec in zip(lengths, gathered, strict=False) for block in vec.split(sizes)
    ]
    # 6. Next forgetting factor.
    return all_weights, P, nue * lam + 1 - nue


PROBLEM = Problem(id=63, make_inputs=make_inputs, solution=solution, atol=1e-8, rtol=1e-6, timed_arg="error")
