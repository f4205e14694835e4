"""The judge as a child process of a worker: its environment (no secrets), starting it, waiting for it while the
lease is renewed, and killing it with everything it started; each worker process has its own locked directory.

Used by the job runner (runner.py), the warm judge (judge_service.py) and the feedback runner alike.
"""

from __future__ import annotations

import atexit
import ctypes
import logging
import os
import signal
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

from django.conf import settings
from django.db import close_old_connections as _close_old_connections
from django.db import connection

from leaderboard.jobs import gpus, judge_commands, workspace

log = logging.getLogger("leaderboard.jobs.judge_process")
WORKER_ID = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
# Variables the judge needs; everything else (DATABASE_URL, BROKER_URL, secrets) stays in the worker.
# PKB_BUILD_CACHE(_BYTES): the build stage and the jobs after it must use one build cache (a host's own, or one shared
# by the hosts of a toolchain), or the jobs compile what the stage built.
PASS_ENV = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "LD_LIBRARY_PATH",
    "OMP_NUM_THREADS",
    "PKB_SANDBOX",
    "PKB_BWRAP",
    "PKB_SETPRIV",
    "PKB_BUILD_CACHE",
    "PKB_BUILD_CACHE_BYTES",
)
PASS_PREFIXES = ("CUDA_", "NVIDIA_", "NCCL_", "TORCH_", "TRITON_", "PKB_JUDGE_")


def close_old_connections() -> None:
    """Drop a database connection that went stale during a long judge run (never inside a transaction)."""
    if not connection.in_atomic_block:
        _close_old_connections()


def supervise(command: list[str], workdir: Path, heartbeat, deadline: float, what: str) -> tuple[str, int | None]:
    """Run the judge (output to workdir/judge.log) and wait for it, renewing the lease with ``heartbeat()``; kill its
    whole process group on the deadline (time.monotonic()) or a lost lease. Returns (exited | timeout | lease_lost,
    the judge's exit status)."""
    with open(workdir / "judge.log", "wb") as logfile:
        process = subprocess.Popen(
            command,
            cwd=str(settings.BASE_DIR),
            env=judge_env(workdir),
            stdout=logfile,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )

        def wait(timeout: float) -> int | None:
            try:
                return process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                return None

        return watch(wait, lambda: kill(process, workdir), heartbeat, deadline, what)


def watch(wait, kill, heartbeat, deadline: float, what: str) -> tuple[str, int | None]:
    """Wait for a judge to finish: ``wait(seconds)`` returns its exit status or None if still running; between waits,
    renew the lease with ``heartbeat()``; ``kill()`` (returning the status) on the deadline or a lost lease."""
    while True:
        status = wait(settings.PKB_HEARTBEAT_SECONDS)
        if status is not None:
            return "exited", status
        if time.monotonic() > deadline:
            return "timeout", kill()
        close_old_connections()
        try:
            alive = heartbeat()
        except Exception:  # the database is unreachable for a moment: keep judging, the lease has slack
            log.warning("%s: heartbeat failed", what, exc_info=True)
            continue
        if not alive:
            return "lease_lost", kill()


def kill(process: subprocess.Popen, tmp: Path) -> int | None:
    """Kill a judge's process group, then what its own clean-up would have removed: rank processes (in sessions of
    their own) and candidate daemons still running from its temporary directory ``tmp``."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    status = process.wait()
    report = judge_commands.sweep_orphans(str(tmp))
    if report["killed_outliving"]:
        log.warning("killed judge left %s processes behind in %s; killed", report["killed_outliving"], tmp)
    return status


def die_with_parent() -> None:
    """In the judge's child process: receive SIGKILL when the worker thread that started it dies."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def judge_env(workdir: Path) -> dict:
    """The judge's environment: the allow-list above, and the worker's GPUs only when it is pinned (gpus.py)."""
    env = {k: v for k, v in os.environ.items() if k in PASS_ENV or k.startswith(PASS_PREFIXES)}
    gpus.pin(env)
    if settings.PKB_BUILD_ARCH:  # the builds' architecture list is part of every build's fingerprint: the stage's
        env["TORCH_CUDA_ARCH_LIST"] = settings.PKB_BUILD_ARCH
    env["PYTHONPATH"] = str(settings.BASE_DIR)
    env["TMPDIR"] = str(workdir)
    env.setdefault("PATH", "/usr/bin:/bin")
    return env


_workspace: workspace.Workspace | None = None
_workspace_lock = threading.Lock()


def work_root() -> str:
    """This worker process's own directory under PKB_WORK_DIR (leaderboard/jobs/workspace.py), locked while it lives."""
    global _workspace
    with _workspace_lock:
        if _workspace is None:
            _workspace = workspace.claim(settings.PKB_WORK_DIR, WORKER_ID)
            atexit.register(workspace.release, _workspace)  # a crash skips this: the next worker sweeps it
        return _workspace.path
