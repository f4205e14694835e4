"""Problem 1 (sum all-reduce), CUDA over symmetric memory: peer reads, signal-pad barriers.

Each rank converts its input to fp32 in its own symmetric buffer; a one-warp barrier kernel (each lane signals one
peer's pad with a system-scope compare-and-swap 0 -> 1, then consumes that peer's signal on its own pad 1 -> 0) makes
every buffer visible; a grid-stride kernel then reads all W peers' buffers through their mapped pointers and sums them
in rank order in fp32 (the same order on every rank, and exact for the problem's integer inputs); a second barrier
keeps the next call from overwriting a buffer a peer still reads. No multicast: plain peer pointers only.
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

__global__ void sum_peers_kernel(const float* const* bufs, float* out, int64_t n, int world) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        float acc = 0.f;
        for (int p = 0; p < world; ++p) acc += bufs[p][i];
        out[i] = acc;
    }
}
torch::Tensor sum_peers(torch::Tensor ptrs, int64_t n, int64_t world) {
    auto out = torch::empty({n}, torch::dtype(torch::kFloat32).device(ptrs.device()));
    int threads = 256;
    int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 132 * 8);
    sum_peers_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const float* const*>(ptrs.data_ptr<int64_t>()), out.data_ptr<float>(), n, (int)world);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""
CPP = """
void barrier(int64_t pads, int64_t rank, int64_t world, int64_t channel);
torch::Tensor sum_peers(torch::Tensor ptrs, int64_t n, int64_t world);
"""
ext = compile_cuda_extension("d2_p01_allreduce_symm", CUDA, CPP, ["barrier", "sum_peers"])
_worlds = {}


def _symmetric(n, device):
    """One fp32 symmetric buffer of n elements per shape, rendezvoused once; its peers' pointers on the device."""
    if n not in _worlds:
        world = dist.get_world_size()
        buf = symm_mem.empty(n, dtype=torch.float32, device=device)
        handle = symm_mem.rendezvous(buf, dist.group.WORLD.group_name)
        peers = [handle.get_buffer(p, (n,), torch.float32) for p in range(world)]
        ptrs = torch.tensor([t.data_ptr() for t in peers], dtype=torch.int64, device=device)
        pads = torch.tensor(handle.signal_pad_ptrs, dtype=torch.int64, device=device)
        _worlds[n] = (buf, handle, peers, ptrs, pads)
    return _worlds[n]


def solution(tensor: torch.Tensor) -> torch.Tensor:
    world, rank, n = dist.get_world_size(), dist.get_rank(), tensor.numel()
    buf, _handle, _peers, ptrs, pads = _symmetric(n, tensor.device)
    buf.copy_(tensor.reshape(-1))
    ext.barrier(pads.data_ptr(), rank, world, 0)
    out = ext.sum_peers(ptrs, n, world)
    ext.barrier(pads.data_ptr(), rank, world, 1)
    return out.view(tensor.shape).to(tensor.dtype)
