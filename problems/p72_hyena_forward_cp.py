"""72 hyena_forward_cp: Hyena long-convolution operator under zigzag context parallelism (sequence -> channel
all_to_all, fp32 FFT convolution, channel -> sequence all_to_all).

Interface as PKB: ``solution(x1_seq, x2_seq, v_seq (1, 1024, 2048) D, h (1024, 4096) D, conv_bias (1024,) D,
num_groups=1024, group_dim=1, group=None, with_zigzag_splitting=True) -> (1, 2048, 1024) D`` (batch, this rank's
zigzag sequence, all channels: transposed relative to the inputs). Rank r holds chunks r and 2W-1-r (of 1024) of a
global sequence S = 2048 W. x1, x2 and v are moved to channel sharding (all_to_all_single, then chunks back to
natural order), u = x2 * v (D), y = causal convolution of u with this rank's filters h (fp32 real FFTs of length 2S,
kernel spectrum divided by 2S, inverse with norm "forward"), y + u * bias in fp32 rounded to D, z = x1 * y (D), then
back to zigzag sequence sharding. h[g, k] = bf16(4096 g + k) / 4096 and conv_bias[c] = bf16(c) / 1024, built
through bf16 aranges as PKB (rows of h are nearly constant at about g, so |y| reaches ~1e5).

Decisions (spec Pitfalls):
- The check: PKB's allclose demanded the reference's exact fp32 FFT rounding (y is a 4096-term sum up to ~1e5;
  FFT error ~0.1 there flips the bf16 roundings of y and z wherever z is small, and two flipped roundings exceed
  rtol = 1e-2), so even an exact fp64 convolution failed. Our ``compare`` allows, per channel c, an absolute error
  of 1e-2 + 2^-17 * max_t |z[t, c]| (about 100 times the fp32 FFT error, measured 6e-8 * max) plus 2e-2 * |z|
  (two bf16 ulps: y and z are each rounded once; measured up to 1.24%). The reference keeps PKB's fp32
  pipeline; an exact fp64 convolution, another FFT length, or a direct convolution now pass, while zeros, x1, or
  any missing exchange miss by O(|z|).
- timed_arg is v_seq instead of PKB's x1_seq: x1 only enters at the last product, so with x1 timed everything else
  (three quarters of the exchanges, the product, the FFT convolution) could be cached across calls.
- Only with ``ctx.reduced`` (CPU development runs) the sizes shrink to 128 channels (= num_groups), local sequence
  512 and filter length 1024 (h[g, k] = bf16(1024 g + k) / 1024); W must still divide 1024 (the spec's rule).
"""

import torch
import torch.distributed as dist

from problems.base import InputContext, Problem

CHANNELS, LOCAL_SEQ, FILTER = 1024, 2048, 4096


def make_inputs(ctx: InputContext):
    W = ctx.world_size
    assert CHANNELS % W == 0, f"world size {W} must divide {CHANNELS}"
    C, Ls, Lh = (128, 512, 1024) if ctx.reduced else (CHANNELS, LOCAL_SEQ, FILTER)
    dev = ctx.device
    ctx.seed(ctx.rank)
    x1, x2, v = (torch.randn(1, C, Ls, dtype=ctx.dtype, device=dev) for _ in range(3))
    h = (torch.arange(C * Lh, dtype=torch.bfloat16, device=dev).reshape(C, Lh) / Lh).to(ctx.dtype)
    conv_bias = (torch.arange(C, dtype=torch.bfloat16, device=dev) / C).to(ctx.dtype)
    return x1, x2, v, h, conv_bias, C, 1, None, True


def zigzag_order(W: int) -> list[int]:
    """The chunks held by ranks 0, 1, ... in local order: [0, 2W-1, 1, 2W-2, ...]."""
    return [c for r in range(W) for c in (r, 2 * W - 1 - r)]


def seq_to_channel(t, group, zigzag):
    """(B, C, L_local) sequence-sharded -> (B, C / W, S) channel-sharded, in natural sequence order."""
    W = dist.get_world_size(group)
    B, C, L = t.shape
    send = t.reshape(B, W, C // W, L).transpose(0, 1).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=group)
    full = recv.permute(1, 2, 0, 3).reshape(B, C // W, W * L)
    if zigzag:
        inverse = torch.argsort(torch.tensor(zigzag_order(W)))
        full = full.reshape(B, C // W, 2 * W, L // 2)[:, :, inverse.to(t.device)].reshape(B, C // W, W * L)
    return full


def channel_to_seq(t, group, zigzag):
    """(B, C / W, S) channel-sharded, natural order -> (B, C, L_local) this rank's (zigzag) sequence."""
    W = dist.get_world_size(group)
    B, Cl, S = t.shape
    L = S // W
    if zigzag:
        order = torch.tensor(zigzag_order(W), device=t.device)
        t = t.reshape(B, Cl, 2 * W, L // 2)[:, :, order].reshape(B, Cl, S)
    send = t.reshape(B, Cl, W, L).permute(2, 0, 1, 3).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=group)
    return recv.transpose(0, 1).reshape(B, W * Cl, L)


def fftconv(u, k, bias):
    """Causal convolution of u (B, C, S) with filters k (C, Lk) through fp32 FFTs of length 2S, plus u * bias."""
    S = u.shape[-1]
    n = 2 * S
    k_f = torch.fft.rfft(k.float(), n=n) / n
    u_f = torch.fft.rfft(u.float(), n=n)
    y = torch.fft.irfft(u_f * k_f, n=n, norm="forward")[..., :S]
    return y + u.float() * bias.float()[:, None]


@torch.no_grad()
def solution(x1_seq, x2_seq, v_seq, h, conv_bias, num_groups, group_dim, group=None, with_zigzag_splitting=True):
    W, rank = dist.get_world_size(group), dist.get_rank(group)
    x1, x2, v = (seq_to_channel(t, group, with_zigzag_splitting) for t in (x1_seq, x2_seq, v_seq))
    groups_local = num_groups // W
    h_local = h[rank * groups_local : (rank + 1) * groups_local].repeat_interleave(group_dim, dim=0)
    channels = x1.shape[1]
    bias_local = conv_bias[rank * channels : (rank + 1) * channels]
    u = x2 * v
    y = fftconv(u, h_local, bias_local).to(x1.dtype)
    z = x1 * y
    return channel_to_seq(z, group, with_zigzag_splitting).transpose(1, 2).contiguous()


def compare(expected, actual, W):
    """Per channel (last dim): |a - e| <= 1e-2 + 2^-17 * max_t |e[..., t, c]| + 2e-2 * |e| (see the docstring)."""
    if type(actual) is not torch.Tensor or actual.shape != expected.shape or actual.dtype != expected.dtype:
        got = f"{actual.dtype} {tuple(actual.shape)}" if isinstance(actual, torch.Tensor) else type(actual).__name__
        return f"expected {expected.dtype} {tuple(expected.shape)}, got {got}"
    e, a = expected.detach().cpu().double(), actual.detach().cpu().double()
    if not torch.isfinite(a).all():
        return f"{int((~torch.isfinite(a)).sum())} non-finite values"
    scale = e.abs().amax(dim=tuple(range(e.dim() - 1)), keepdim=True)
    allowed = 1e-2 + 2.0**-17 * scale + 2e-2 * e.abs()
    bad = (a - e).abs() > allowed
    if bad.any():
        index = [int(i) for i in torch.unravel_index(bad.reshape(-1).nonzero()[0, 0], bad.shape)]
        return (
            f"{int(bad.sum())} of {e.numel()} elements outside the per-channel tolerance; first at {index}: "
            f"got {a[tuple(index)].item():.6g}, expected {e[tuple(index)].item():.6g}"
        )
    return None


PROBLEM = Problem(
    id=72,
    make_inputs=make_inputs,
    solution=solution,
    compare=compare,
    timed_arg="v_seq",
    allows_world_size=lambda W: W >= 1 and CHANNELS % W == 0,
)
