"""What every rank process gets, reference and candidate alike: an allow-list of the host's environment variables (no
credentials, no broker or database URLs, no proxies), NVLink multicast switched off (multicast can take a shared host's
GPUs out of service), the repository and the candidates' utilities on its path, and death with the judge (a
parent-death signal; the judge also kills each rank's process session). What confines a candidate's ranks beyond
this: evaluator/process/sandbox.py.
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import signal
import sys

REPO_ROOT = str(pathlib.Path(__file__).resolve().parents[2])
PKB_UTILS = str(pathlib.Path(REPO_ROOT) / "evaluator" / "pkb_utils")

# Never let NCCL, symmetric memory or NVSHMEM use NVLink multicast (docs/architecture.md; the lent GPU hosts forbid it).
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}

# Host variables a rank may inherit: toolchain and device plumbing only.
PASS_THROUGH = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_HOME",
    "CUDA_PATH",
    "LD_LIBRARY_PATH",
    "TORCH_CUDA_ARCH_LIST",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "CC",
    "CXX",
    "TRITON_PTXAS_PATH",
    "NCCL_DEBUG",
    "NCCL_SOCKET_IFNAME",
    "NCCL_P2P_DISABLE",
    "NCCL_SHM_DISABLE",
    "NCCL_IB_DISABLE",
    "GLOO_SOCKET_IFNAME",
    "PKB_THREADS_PER_RANK",
    "LANG",
    "LC_ALL",
    "MAX_JOBS",
)  # compile processes per build (the build stage bounds its own: pkb prebuild --max-jobs)

PR_SET_PDEATHSIG = 1
# Loaded at import, before any fork: functions that run between fork and exec only call into it.
_LIBC = ctypes.CDLL(None, use_errno=True)


def shared_environment(home: str) -> dict:
    """What every rank's environment holds whatever its rank: the allow-list, the interpreter's settings, one thread
    for OpenMP and multicast off (also the whole environment of the fork server, evaluator/process/forkserver.py)."""
    tmp = os.path.join(home, "tmp")
    os.makedirs(tmp, exist_ok=True)
    python_bin = os.path.dirname(sys.executable)
    env = {k: os.environ[k] for k in PASS_THROUGH if k in os.environ}
    env.update(
        PATH=os.pathsep.join([python_bin, "/usr/local/cuda/bin", "/usr/local/bin", "/usr/bin", "/bin"]),
        HOME=home,
        TMPDIR=tmp,
        PYTHONUNBUFFERED="1",
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONNOUSERSITE="1",
        PYTHONPATH=os.pathsep.join([REPO_ROOT, PKB_UTILS]),
        OMP_NUM_THREADS="1",
        LANG=env.get("LANG", "C.UTF-8"),
        **MULTICAST_OFF,
    )
    return env


def rank_environment(
    rank: int,
    world_size: int,
    port: int,
    rank_dir: str,
    trusted: bool,
    loopback_only: bool = False,
    user: str | None = None,
    build_dir: str | None = None,
    group_tmp: str | None = None,
) -> dict:
    env = shared_environment(rank_dir)
    if group_tmp:
        # One TMPDIR for the whole group: ranks meet there (torch's symmetric memory passes CUDA IPC handles over Unix
        # sockets it names $TMPDIR/symm_mem-<pid>, so a peer must find the socket under its own TMPDIR).
        env["TMPDIR"] = group_tmp
    env.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world_size),
        LOCAL_WORLD_SIZE=str(world_size),
        TORCH_EXTENSIONS_DIR=os.path.join(rank_dir, "torch_extensions"),
        TRITON_CACHE_DIR=os.path.join(rank_dir, "triton_cache"),
        PKB_SCRATCH=rank_dir,
        # The judge stops the idle group (SIGSTOP) while the other runs and keeps its own deadlines; torch's NCCL
        # heartbeat monitor would count a long stop as a hung watchdog and kill the rank on resume.
        TORCH_NCCL_ENABLE_MONITORING="0",
    )
    if build_dir:  # one build directory for the whole group (evaluator/process/builds.py): compiled once, not per rank
        env.update(
            TORCH_EXTENSIONS_DIR=os.path.join(build_dir, "torch_extensions"),
            TRITON_CACHE_DIR=os.path.join(build_dir, "triton_cache"),
            PKB_BUILD_LOG=os.path.join(build_dir, "builds.log"),
        )
    if user:  # getpass.getuser() (torch, triton caches) must not need a passwd entry for a numeric uid
        env.update(USER=user, LOGNAME=user)
    if loopback_only:  # the rank's namespace has nothing but lo: collectives must bootstrap over it
        env.update(GLOO_SOCKET_IFNAME="lo", NCCL_SOCKET_IFNAME="lo")
    return env


def die_with_judge() -> None:
    """Between fork and exec of a trusted rank: killed when the judge's thread that started it dies, so a judge
    killed with SIGKILL (a worker crash) leaves no reference rank behind, stopped or not."""
    _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
