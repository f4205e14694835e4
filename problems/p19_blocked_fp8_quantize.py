"""19 blocked_fp8_quantize: 1x128-block FP8 (E4M3) quantization (DeepSeek-V3 act_quant), then all-gather.

Interface as PKB: ``solution(local_tensor (M, N) D contiguous, block_size: int = 128) -> (y_global (W*M, N)
float8_e4m3fn, s_global (W*M, N/128) float32)``, identical on every rank. Per block of 128 contiguous elements:
s = amax / 448, y = fp8(x / s) (round to nearest even), s stored as is (0 for an all-zero block, divided by 1 then).
Two list all_gathers on WORLD: the payload viewed as uint8 (NCCL has no fp8 type), then the scales.

Decisions (spec Pitfalls):
- Division: our reference divides with torch's IEEE-rounded fp32 division (CPU and CUDA alike), not PKB's Triton
  approximate division. The payload therefore cannot be checked bit for bit fairly: bf16 inputs make x / s land
  exactly on an fp8 rounding midpoint often (~0.1% of elements), where two correct fp32 divisions may round to
  neighbouring fp8 values. The check (``compare``) requires every fp8 value to equal the reference or be its
  neighbour (one E4M3 step), with at most max(4, numel / 10^4) neighbours: Triton's div.full.f32 (about one
  difference per 8.4M elements) passes; a reciprocal multiply x * (448 / amax) (~0.13% of elements) fails, as
  the spec advises; any larger error, a NaN, zeros or unquantized data fail.
- Dtypes are checked (unlike PKB's comparison): the payload must be float8_e4m3fn and the scales float32.
- Scales are ~amax/448 ~ 0.007, below atol = 1e-2, so zeros would pass an absolute check: they are compared with
  rtol = 1e-2 and no absolute tolerance (they match exactly in practice).
- The s == 0 guard is exercised: each rank zeroes one random 128-element block of its otherwise standard normal
  input, so a candidate must store scale 0 and payload 0 there (no NaN from 0/0).
- N must be a multiple of 128; the builder refuses other N.
"""

import torch
import torch.distributed as dist

from problems._elementwise_close import sequence_mismatch, tensor_mismatch
from problems.base import InputContext, Problem

BLOCK = 128
FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0  # largest finite E4M3 value


def make_inputs(ctx: InputContext):
    if ctx.N % BLOCK:
        raise ValueError(f"N = {ctx.N} must be a multiple of the block size {BLOCK}")
    ctx.seed(ctx.rank)
    local_tensor = torch.randn(ctx.M, ctx.N, dtype=ctx.dtype, device=ctx.device)
    blocks = local_tensor.view(-1, BLOCK)
    blocks[torch.randint(blocks.shape[0], ()).item()] = 0  # exercises the zero-scale guard
    return local_tensor, BLOCK


def quantize_blocks(x: torch.Tensor, block_size: int):
    """Local 1 x block_size quantization: (fp8 payload shaped like x, fp32 scales (M, N / block_size))."""
    assert x.is_contiguous() and x.shape[-1] % block_size == 0
    blocks = x.float().view(-1, block_size)
    amax = blocks.abs().amax(dim=1, keepdim=True)
    # Divided by a tensor, not the Python number: CUDA torch turns division by a Python scalar into a multiply by
    # its reciprocal, whose scales differ from amax / 448 in the last bit for some blocks (x / s then lands on the
    # other side of an fp8 rounding midpoint for ~0.1% of elements). Tensor by tensor is IEEE on CPU and CUDA.
    scale = amax / torch.full_like(amax, FP8_MAX)
    safe = torch.where(scale == 0, torch.ones_like(scale), scale)
    y = (blocks / safe).to(FP8).view(x.shape)
    return y, scale.view(*x.shape[:-1], x.shape[-1] // block_size)


def solution(local_tensor: torch.Tensor, block_size: int = 128):
    y, s = quantize_blocks(local_tensor, block_size)
    if not dist.is_initialized():
        return y, s
    world = dist.get_world_size()
    y_bytes = y.view(torch.uint8)
    y_parts = [torch.empty_like(y_bytes) for _ in range(world)]
    dist.all_gather(y_parts, y_bytes)
    s_parts = [torch.empty_like(s) for _ in range(world)]
    dist.all_gather(s_parts, s)
    return torch.cat(y_parts).view(FP8), torch.cat(s_parts)


def _ordinal(fp8: torch.Tensor) -> torch.Tensor:
    """E4M3 values as integers ordered like the values (neighbours differ by 1; +0 and -0 are both 0)."""
    bits = fp8.view(torch.uint8).to(torch.int32)
    magnitude = bits & 0x7F
    return torch.where(bits >= 0x80, -magnitude, magnitude)


def payload_mismatch(expected: torch.Tensor, actual, what: str = "output[0] (fp8 payload)") -> str | None:
    if type(actual) is not torch.Tensor:
        return f"{what}: expected a torch.Tensor, got {type(actual).__name__}"
    if tuple(actual.shape) != tuple(expected.shape):
        return f"{what}: shape {tuple(actual.shape)} != expected {tuple(expected.shape)}"
    if actual.dtype != FP8:
        return f"{what}: dtype {actual.dtype} != expected {FP8}"
    nan = (actual.cpu().view(torch.uint8) & 0x7F) == 0x7F
    if nan.any():
        return f"{what}: {int(nan.sum())} NaN values"
    steps = (_ordinal(actual.cpu()) - _ordinal(expected.cpu())).abs()
    worst = int(steps.max()) if steps.numel() else 0
    if worst > 1:
        flat = int((steps.reshape(-1) > 1).nonzero()[0])
        got, want = actual.cpu().reshape(-1)[flat].float().item(), expected.cpu().reshape(-1)[flat].float().item()
        return (
            f"{what}: {int((steps > 1).sum())} of {steps.numel()} values differ by more than one E4M3 step; "
            f"first at flat index {flat}: got {got}, expected {want}"
        )
    neighbours = int((steps == 1).sum())
    allowed = max(4, steps.numel() // 10_000)
    if neighbours > allowed:
        return (
            f"{what}: {neighbours} of {steps.numel()} values are one E4M3 step off the reference, more than "
            f"the {allowed} that fp32 division rounding explains"
        )
    return None


def compare(expected, actual, world_size: int) -> str | None:
    return (
        sequence_mismatch(actual, 2)
        or payload_mismatch(expected[0], actual[0])
        or tensor_mismatch(expected[1], actual[1], atol=0.0, rtol=1e-2, what="output[1] (scales)")
    )


PROBLEM = Problem(
    id=19,
    make_inputs=make_inputs,
    solution=solution,
    compare=compare,
    atol=0.0,
    rtol=1e-2,
    strict_dtype="the quantizer's product is the float8_e4m3fn payload with float32 scales",
)
