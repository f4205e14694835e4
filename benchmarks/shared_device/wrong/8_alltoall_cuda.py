"""PLANTED WRONG: block d lands in slot d of peer d (the destination index, not the sender's rank).

Problem 8 (equal-split all-to-all of a (W, M, N) tensor), CUDA over symmetric memory: peer writes.

Rank r pushes its block d into slot r of peer d's symmetric (W, M, N) buffer through the mapped pointer (one grid
row per destination, 16-byte words); a signal-pad barrier (one warp, a lane per peer, system-scope
compare-and-swap) says every slot is written; each rank copies its buffer out, and a second barrier keeps the next
call's pushes from landing before every peer has copied. No multicast: plain peer pointers only.
"""

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem
from utils.cuda_helpers import compile_cuda_extension

CUDA = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

__device__ __forceinline__ void send_signal(uint32_t* slot) {
    while (atomicCAS_system(slot, 0u, 1u) != 0u) {}   // wait until the peer consumed the previous signal
}
__device__ __forceinline__ void wait_signal(uint32_t* slot) {
    while (atomicCAS_system(slot, 1u, 0u) != 1u) {}
}
__global__ void barrier_kernel(uint32_t* const* pads, int rank, int world, int channel) {
    int peer = threadIdx.x;
    if (peer >= world) return;
    __threadfence_system();
    send_signal(pads[peer] + channel * world + rank);
    wait_signal(pads[rank] + channel * world + peer);
    __threadfence_system();
}
void barrier(int64_t pads, int64_t rank, int64_t world, int64_t channel) {
    TORCH_CHECK(world <= 32, "one warp signals at most 32 peers");
    barrier_kernel<<<1, 32, 0, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<uint32_t* const*>(pads), (int)rank, (int)world, (int)channel);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}

__device__ __forceinline__ void copy_bytes(char* dst, const char* src, int64_t nbytes) {
    int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, stride = (int64_t)gridDim.x * blockDim.x;
    int64_t done = 0;
    if ((((uintptr_t)dst) | ((uintptr_t)src)) % 16 == 0) {   // 16-byte words where both ends are aligned
        int64_t words = nbytes / 16;
        for (int64_t i = tid; i < words; i += stride)
            reinterpret_cast<int4*>(dst)[i] = reinterpret_cast<const int4*>(src)[i];
        done = words * 16;
    }
    for (int64_t i = done + tid; i < nbytes; i += stride) dst[i] = src[i];
}

__global__ void push_blocks_kernel(char* const* peers, const char* src, int64_t nbytes, int rank) {
    int dest = blockIdx.y;
    copy_bytes(peers[dest] + dest * nbytes, src + (int64_t)dest * nbytes, nbytes);
}
void push_blocks(torch::Tensor ptrs, torch::Tensor src, int64_t rank, int64_t world) {
    int64_t nbytes = src.numel() / world * src.element_size();
    dim3 grid((unsigned)std::min<int64_t>((nbytes / 16 + 255) / 256 + 1, 264), (unsigned)world);
    push_blocks_kernel<<<grid, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<char* const*>(ptrs.data_ptr<int64_t>()), (const char*)src.data_ptr(), nbytes, (int)rank);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}
"""
CPP = """
void barrier(int64_t pads, int64_t rank, int64_t world, int64_t channel);
void push_blocks(torch::Tensor ptrs, torch::Tensor src, int64_t rank, int64_t world);
"""
ext = compile_cuda_extension("d2_p08_alltoall_symm_wrong", CUDA, CPP, ["barrier", "push_blocks"])
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


def solution(tensor: torch.Tensor) -> torch.Tensor:
    world, rank = dist.get_world_size(), dist.get_rank()
    src = tensor.contiguous()
    buf, _handle, _peers, ptrs, pads = _symmetric(src.shape, src.dtype, src.device)
    ext.barrier(pads.data_ptr(), rank, world, 0)  # every peer is past its last copy-out of the previous call
    ext.push_blocks(ptrs, src, rank, world)
    ext.barrier(pads.data_ptr(), rank, world, 1)  # every block bound for this rank has landed
    return buf.clone()
