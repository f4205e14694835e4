"""What a rank process may see: a scrubbed environment, a private working directory and resource limits.

Candidates get no credentials, no broker or database URLs, no proxy settings: only an allow-list of variables. NVLink
multicast is switched off for every rank (reference and candidate) because it can take a shared host's GPUs out of
service. Stronger isolation (own user, namespaces, no network) is layered on in issue 7's hardening.
"""
from __future__ import annotations

import os
import pathlib
import resource
import sys

REPO_ROOT = str(pathlib.Path(__file__).resolve().parent.parent)
PKB_UTILS = str(pathlib.Path(__file__).resolve().parent / "pkb_utils")

# Never let NCCL, symmetric memory or NVSHMEM use NVLink multicast (see DEVELOPERS.md and the device notes).
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}

# Host variables a rank may inherit: toolchain and device plumbing only.
PASS_THROUGH = ("CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH", "TORCH_CUDA_ARCH_LIST",
                "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "CC", "CXX", "TRITON_PTXAS_PATH",
                "NCCL_DEBUG", "NCCL_SOCKET_IFNAME", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE",
                "GLOO_SOCKET_IFNAME", "PKB_THREADS_PER_RANK", "LANG", "LC_ALL")

FILE_SIZE_LIMIT = 2 * 2**30  # one file a candidate writes (logs included)


def rank_environment(rank: int, world_size: int, port: int, rank_dir: str, trusted: bool) -> dict:
    tmp = os.path.join(rank_dir, "tmp")
    os.makedirs(tmp, exist_ok=True)
    python_bin = os.path.dirname(sys.executable)
    env = {k: os.environ[k] for k in PASS_THROUGH if k in os.environ}
    env.update(
        PATH=os.pathsep.join([python_bin, "/usr/local/cuda/bin", "/usr/local/bin", "/usr/bin", "/bin"]),
        HOME=rank_dir, TMPDIR=tmp, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1",
        PYTHONPATH=os.pathsep.join([REPO_ROOT, PKB_UTILS]),
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world_size), LOCAL_WORLD_SIZE=str(world_size), OMP_NUM_THREADS="1",
        TORCH_EXTENSIONS_DIR=os.path.join(rank_dir, "torch_extensions"),
        TRITON_CACHE_DIR=os.path.join(rank_dir, "triton_cache"),
        PKB_SCRATCH=rank_dir,
    )
    env.setdefault("LANG", "C.UTF-8")
    env.update(MULTICAST_OFF)
    return env


def working_directory(rank_dir: str, trusted: bool) -> str:
    return rank_dir


def limit_candidate() -> None:
    """Runs in the candidate's process between fork and exec: no core dumps, bounded files."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
