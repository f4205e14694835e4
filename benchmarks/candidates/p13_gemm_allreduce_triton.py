"""Problem 13 in Triton: a tiled bf16 GEMM with fp32 accumulation rounded to bf16 (as the spec's per-rank GEMM),
then NCCL's bf16 sum across ranks (within the problem's reduction-order tolerance); nothing to sum at W=1."""

import torch
import torch.distributed as dist
import triton
import triton.language as tl


@triton.jit
def _gemm(
    a,
    b,
    c,
    M,
    N,
    K,
    sam,
    sak,
    sbk,
    sbn,
    scm,
    scn,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP: tl.constexpr,
):
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BM)
    grid_n = tl.cdiv(N, BN)
    group = pid // (GROUP * grid_n)
    first_m = group * GROUP
    size_m = min(grid_m - first_m, GROUP)
    pm = first_m + (pid % size_m)
    pn = (pid % (GROUP * grid_n)) // size_m
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(
            a + rm[:, None] * sam + (k + rk)[None, :] * sak, mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0
        )
        y = tl.load(
            b + (k + rk)[:, None] * sbk + rn[None, :] * sbn, mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0
        )
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def solution(A_local: torch.Tensor, B_local: torch.Tensor) -> torch.Tensor:
    M, K = A_local.shape
    N = B_local.shape[1]
    C = torch.empty((M, N), dtype=A_local.dtype, device=A_local.device)
    BM, BN, BK = 128, 128, 64
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    _gemm[grid](
        A_local,
        B_local,
        C,
        M,
        N,
        K,
        A_local.stride(0),
        A_local.stride(1),
        B_local.stride(0),
        B_local.stride(1),
        C.stride(0),
        C.stride(1),
        BM=BM,
        BN=BN,
        BK=BK,
        GROUP=8,
        num_warps=8,
        num_stages=3,
    )
    if dist.get_world_size() > 1:
        dist.all_reduce(C)
    return C
