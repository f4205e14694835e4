"""Problem 19 (blocked fp8 quantize): the right quantized values, but the payload returned as float32 instead of
float8_e4m3fn. The spec fixes the payload's dtype (it is the quantizer's product): incorrect."""
import torch
import torch.distributed as dist

BLOCK_MAX = 448.0


def solution(local_tensor, block_size=128):
    blocks = local_tensor.float().view(-1, block_size)
    scale = blocks.abs().amax(dim=1, keepdim=True) / BLOCK_MAX
    y = (blocks / torch.where(scale == 0, torch.ones_like(scale), scale)).to(torch.float8_e4m3fn)
    y = y.float().view(local_tensor.shape)  # the values an fp8 payload holds, in the wrong dtype
    s = scale.view(local_tensor.shape[0], -1)
    world = dist.get_world_size()
    ys = [torch.empty_like(y) for _ in range(world)]
    ss = [torch.empty_like(s) for _ in range(world)]
    dist.all_gather(ys, y)
    dist.all_gather(ss, s)
    return torch.cat(ys), torch.cat(ss)
