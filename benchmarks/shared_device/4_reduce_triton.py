"""Problem 4 (sum reduce onto rank ``dst``; non-roots return their own data), Triton over symmetric memory.

Each rank converts its input to fp32 in its symmetric buffer; a Triton signal-pad barrier (one program per peer,
system-scope compare-and-swap) makes the buffers visible; the root alone reads all W peers' buffers through their
pointers and sums them in rank order in fp32 (exact for the problem's integer inputs); a second barrier keeps every
rank's next copy from landing before the root has read. Non-roots return a copy of their input, as NCCL leaves it.
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
def sum_all(ptrs, out, n, world, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for p in range(0, world):
        src = tl.load(ptrs + p).to(tl.pointer_type(tl.float32))
        acc += tl.load(src + idx, mask=mask, other=0.0)
    tl.store(out + idx, acc, mask=mask)


def solution(tensor: torch.Tensor, dst: int = 0) -> torch.Tensor:
    world, rank, n = dist.get_world_size(), dist.get_rank(), tensor.numel()
    buf, _handle, _peers, ptrs, pads = _symmetric((n,), torch.float32, tensor.device)
    buf.copy_(tensor.reshape(-1))
    barrier(pads, rank, world, 0)
    if rank == dst:
        out = torch.empty(n, dtype=torch.float32, device=tensor.device)
        sum_all[(triton.cdiv(n, BLOCK),)](ptrs, out, n, world, BLOCK=BLOCK)
        result = out.view(tensor.shape).to(tensor.dtype)
    else:
        result = tensor.clone()
    barrier(pads, rank, world, 1)
    return result
