"""PLANTED WRONG: every rank pulls from the last rank's buffer instead of the root's.

Problem 3 (out-of-place broadcast from rank 0), Triton over symmetric memory: every rank pulls from the root.

The root copies its tensor into its symmetric buffer; a Triton signal-pad barrier (one program per peer, system-scope
compare-and-swap) makes it visible; every rank then reads the root's buffer through the root's pointer (from a
device table, cast to a pointer) into its own output with a Triton copy of 32-bit words; a second barrier keeps the
root's next copy from landing before every rank has read.
"""

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def signal_barrier(pads, rank, world, channel):
    """One program per peer: signal that peer's pad (0 -> 1, once its previous signal was consumed), then consume the
    peer's signal on this rank's pad (1 -> 0). System-scope release/acquire: data written before is visible after."""
    peer = tl.program_id(0)
    send = tl.load(pads + peer).to(tl.pointer_type(tl.int32)) + channel * world + rank
    recv = tl.load(pads + rank).to(tl.pointer_type(tl.int32)) + channel * world + peer
    while tl.atomic_cas(send, 0, 1, sem="release", scope="sys") != 0:
        pass
    while tl.atomic_cas(recv, 1, 0, sem="acquire", scope="sys") != 1:
        pass


def barrier(pads, rank, world, channel):
    signal_barrier[(world,)](pads, rank, world, channel, num_warps=1)


_worlds = {}


def _symmetric(shape, dtype, device):
    """One symmetric buffer per (shape, dtype), rendezvoused once; its peers' pointers and signal pads on the device."""
    key = (tuple(shape), dtype)
    if key not in _worlds:
        world = dist.get_world_size()
        buf = symm_mem.empty(*shape, dtype=dtype, device=device)
        handle = symm_mem.rendezvous(buf, dist.group.WORLD.group_name)
        peers = [handle.get_buffer(p, tuple(shape), dtype) for p in range(world)]
        ptrs = torch.tensor([t.data_ptr() for t in peers], dtype=torch.int64, device=device)
        pads = torch.tensor(handle.signal_pad_ptrs, dtype=torch.int64, device=device)
        _worlds[key] = (buf, handle, peers, ptrs, pads)
    return _worlds[key]


def _words(t: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor's bytes as 32-bit words where they divide, else as bytes (copies move raw bits)."""
    flat = t.contiguous().view(-1)
    raw = flat.view(torch.uint8)
    return raw.view(torch.int32) if raw.numel() % 4 == 0 else raw


@triton.jit
def pull(ptrs, out, root, n, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    src = tl.load(ptrs + root).to(tl.pointer_type(out.dtype.element_ty))
    tl.store(out + idx, tl.load(src + idx, mask=mask), mask=mask)


def solution(tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
    world, rank = dist.get_world_size(), dist.get_rank()
    words = _words(tensor)
    buf, _handle, _peers, ptrs, pads = _symmetric(words.shape, words.dtype, tensor.device)
    buf.copy_(words)
    barrier(pads, rank, world, 0)
    out = torch.empty_like(words)
    pull[(triton.cdiv(words.numel(), BLOCK),)](ptrs, out, world - 1, words.numel(), BLOCK=BLOCK)
    barrier(pads, rank, world, 1)
    return out.view(torch.uint8).view(tensor.dtype).view(tensor.shape)
