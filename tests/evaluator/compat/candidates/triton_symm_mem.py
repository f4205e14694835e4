"""Compat style: Triton with symmetric memory (torch.distributed._symmetric_memory, peer pointers only: no
multicast/multimem). Each rank copies its input into a symmetric buffer (allocated and rendezvoused once per shape),
a device barrier, then one Triton kernel per peer adds that peer's buffer into an fp32 accumulator in rank order (the
same sum on every rank), a second barrier before the buffer is reused. At W = 1 the same kernel adds the input alone.
Problem 1 on CUDA; expected: correct."""
import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem
import triton
import triton.language as tl
from utils.triton_utils import cdiv

BLOCK = 1024
_buffers = {}


@triton.jit
def add_into(acc_ptr, src_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    acc = tl.load(acc_ptr + offsets, mask=mask)
    src = tl.load(src_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(acc_ptr + offsets, acc + src, mask=mask)


def _symmetric(shape, dtype, device):
    key = (tuple(shape), dtype, device)
    if key not in _buffers:
        buffer = symm_mem.empty(*shape, dtype=dtype, device=device)
        handle = symm_mem.rendezvous(buffer, dist.group.WORLD.group_name)
        _buffers[key] = (buffer, handle)
    return _buffers[key]


def solution(tensor):
    n = tensor.numel()
    acc = torch.zeros(tensor.shape, dtype=torch.float32, device=tensor.device)
    grid = (cdiv(n, BLOCK),)
    world = dist.get_world_size()
    if world == 1:
        add_into[grid](acc, tensor.contiguous(), n, BLOCK=BLOCK)
        return acc.to(tensor.dtype)
    buffer, handle = _symmetric(tensor.shape, tensor.dtype, tensor.device)
    buffer.copy_(tensor)
    handle.barrier(channel=0)
    for peer in range(world):
        add_into[grid](acc, handle.get_buffer(peer, tuple(tensor.shape), tensor.dtype), n, BLOCK=BLOCK)
    handle.barrier(channel=0)  # every peer has read this rank's buffer before the next call overwrites it
    return acc.to(tensor.dtype)
