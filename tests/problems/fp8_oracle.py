"""Independent fp8 (e4m3) delayed-scaling round trip for the fp8 communication problems (p52, p53)."""

import torch


def e4m3_round(v):
    """Round fp32 values to the float8 e4m3fn grid by hand: 3 mantissa bits, subnormals below 2^-6, ties to even."""
    exponent = torch.floor(torch.log2(v.abs().clamp_min(2.0**-30))).clamp_min(-6)
    step = torch.exp2(exponent - 3)
    return torch.round(v / step) * step  # torch.round rounds half to even


def fp8_round_trip(x, history):
    """x quantized with the scale of its rotated amax history and back: (reconstruction, new history, scale)."""
    amax = x.float().abs().max()
    new_hist = torch.cat([history[1:], amax.to(torch.bfloat16).reshape(1)])
    scale = new_hist.float().max() / 448.0
    return (e4m3_round(x.float() / scale) * scale).to(x.dtype), new_hist, scale
