"""59 physicsnemo_distributed_rfft: slab-distributed forward 2-D real FFT (column slabs in, row-block half
spectrum out).

Interface as PKB: ``solution(x (B, H, Wd/W) f32, s=(H, Wd), dim=(1, 2), norm="ortho", group=None)`` returns this
rank's frequency rows [r*H/W, (r+1)*H/W) of ``rfft2(x_full, norm="ortho")``: complex64 (B, H/W, Wd//2 + 1). B =
max(1, M // 64), H = roundup(max(16, M), W), Wd = roundup(max(16, N), W); every rank draws the same x_full (seed key
"shared") and keeps its column slab. Steps: complex FFT along dim[0], one list all_to_all (row chunk j to rank j),
concatenation along dim[1] in source order, complex FFT along dim[1], keep the first Wd//2 + 1 columns.

Decisions (spec Pitfalls):
- The output is complex and our judge compares real AND imaginary parts (``view_as_real``); PKB casts to float32 and
  drops the imaginary part, so a conjugated or sign-flipped answer passed there. This is stricter than PKB.
- The dtype argument is ignored as in PKB: the input is always float32 and the output complex64.
- Float32 FFT error is ~1e-6 against atol = rtol = 1e-2, so the default tolerances are meaningful as they are.
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem


def roundup(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def make_inputs(ctx: InputContext):
    W = ctx.world_size
    B = max(1, ctx.M // 64)
    H = roundup(max(16, ctx.M), W)
    Wd = roundup(max(16, ctx.N), W)
    ctx.seed("shared")  # one global field, identical on every rank
    x_full = torch.randn(B, H, Wd, dtype=torch.float32, device=ctx.device)
    width = Wd // W
    x = x_full[:, :, ctx.rank * width : (ctx.rank + 1) * width].contiguous()
    return x, (H, Wd), (1, 2), "ortho", None


@torch.no_grad()
def solution(x, s, dim, norm="ortho", group=None):
    W = dist.get_world_size(group)
    d0, d1 = (d % x.dim() for d in dim)
    rows = torch.fft.fft(x, n=s[0], dim=d0, norm=norm)  # complex64, all rows, this rank's columns
    send = [chunk.contiguous() for chunk in rows.split(rows.shape[d0] // W, dim=d0)]
    recv = [torch.empty_like(chunk) for chunk in send]
    dist.all_to_all(recv, send, group=group)
    block = torch.cat(recv, dim=d1)  # this rank's row block, all columns in global order
    spectrum = torch.fft.fft(block, n=s[1], dim=d1, norm=norm)
    return spectrum.narrow(d1, 0, s[1] // 2 + 1).contiguous()


PROBLEM = Problem(id=59, make_inputs=make_inputs, solution=solution)
