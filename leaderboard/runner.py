"""What a worker does with one job id: claim, run the judge in a subprocess, heartbeat, store the document.

The candidate's code never enters this process: it is written to a private directory and handed to
``python -m evaluator.cli eval`` (the trusted judge), which runs it in its own rank processes. A judge that exits
non-zero, writes unreadable JSON, hangs past the job's timeout, or dies with this worker is an ``infra_error``:
retried, never scored against the candidate, refunded when retries run out. With ``PKB_WARM_SPARES`` the same eval
command goes to this thread's long-lived judge instead (leaderboard/judge_service.py), under the same rules.
"""
from __future__ import annotations

import atexit
import ctypes
import json
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import close_old_connections as _close_old_connections
from django.db import connection

from leaderboard import judge_commands, judge_service, services, workspace
from leaderboard.models import VERDICTS

log = logging.getLogger("leaderboard.runner")
WORKER_ID = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
# Variables the judge needs; everything else (DATABASE_URL, BROKER_URL, secrets) stays in the worker.
PASS_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "LD_LIBRARY_PATH", "OMP_NUM_THREADS", "PKB_SANDBOX",
            "PKB_BWRAP", "PKB_SETPRIV")
PASS_PREFIXES = ("CUDA_", "NVIDIA_", "NCCL_", "TORCH_", "TRITON_", "PKB_JUDGE_")
TAIL = 8000


def run_job(job_id: int, worker: str = WORKER_ID) -> str:
    """Evaluate one job if this worker can claim it. Returns what happened (for logs and tests)."""
    job = services.job_claim(job_id, worker)
    if job is None:
        return "not_claimed"
    log.info("job %s: claimed by %s (attempt %s, run %s)", job.pk, worker, job.attempts, job.run)
    workdir = Path(tempfile.mkdtemp(prefix=f"job{job.pk}-", dir=_work_root()))
    try:
        document, error = _judge(job, workdir, worker)
        close_old_connections()
        if document is not None:
            stored = services.job_finish(job.pk, worker, document)
            return "done" if stored is not None else "lease_lost"
        stored = services.job_infra_error(job.pk, worker, error["message"], error.get("logs"))
        return "infra_error" if stored is not None else "lease_lost"
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def close_old_connections() -> None:
    """Drop a database connection that went stale during a long judge run (never inside a transaction)."""
    if not connection.in_atomic_block:
        _close_old_connections()


JUDGE = [sys.executable, "-m", "evaluator.cli"]


def judge_command(job, candidate_path: Path, out_path: Path) -> list[str]:
    profile = job.profile
    command = JUDGE + ["eval", job.candidate.problem.stem, str(candidate_path),
                       "--world-size", str(profile.world_size), "--device", profile.device,
                       "--trials", str(profile.trials), "--json", str(out_path)]
    if profile.device == "cpu":
        command.append("--reduced")
    if profile.timing_pairs > 1:
        command += ["--pairs", str(profile.timing_pairs)]
    if profile.multicast_allowed:
        command.append("--multicast-allowed")
    if profile.ranked or settings.PKB_SANDBOX_REQUIRED:
        command.append("--require-sandbox")  # fail closed: never a ranked result from an unsandboxed candidate
    command.extend(hidden_check_flags(job))
    return command


# World sizes a CPU profile may use for the hidden run: gloo ranks are processes, but more than 4 of them on a CI host
# only costs time.
CPU_HIDDEN_MAX_WORLD_SIZE = 4


def hidden_check_flags(job) -> list[str]:
    """Hidden checks for a job whose result can rank (its profile is ranked; a private submission may still be
    published): a trial at a shape the judge draws, and a correctness-only run at a world size the candidate cannot
    predict (drawn here from the OS, never from the job id). None with ``PKB_HIDDEN_CHECKS`` off or on unranked
    profiles, and no hidden world size where the problem and the profile's devices leave no other one (W = 1 hosts)."""
    profile = job.profile
    if not settings.PKB_HIDDEN_CHECKS or not profile.ranked:
        return []
    flags = ["--hidden-shape"]
    other = hidden_world_sizes(job.candidate.problem_id, profile)
    if other:
        flags += ["--hidden-world-size", str(random.SystemRandom().choice(other))]
    return flags


def hidden_world_sizes(problem_id: int, profile) -> list[int]:
    """Every world size other than the profile's that the problem allows and the profile's host can run: up to its
    GPUs (the profile's W) on CUDA, 1..4 on CPU."""
    import problems

    try:
        problem = problems.get(problem_id)
    except Exception:  # noqa: BLE001 - not implemented or broken here: the judge will say so; no hidden run
        return []
    top = profile.world_size if profile.device == "cuda" else CPU_HIDDEN_MAX_WORLD_SIZE
    return [w for w in range(1, top + 1) if w != profile.world_size and problem.allows_world_size(w)]


def _judge(job, workdir: Path, worker: str) -> tuple[dict | None, dict | None]:
    candidate = job.candidate
    path = workdir / Path(candidate.filename).name
    path.write_text(candidate.code, encoding="utf-8")
    out = workdir / "result.json"
    command = judge_command(job, path, out)
    started = time.monotonic()
    heartbeat = lambda: services.job_heartbeat(job.pk, worker)  # noqa: E731
    deadline = started + settings.PKB_JOB_TIMEOUT_SECONDS
    if settings.PKB_WARM_SPARES and command[:len(JUDGE)] == JUDGE:
        service = judge_service.for_thread(job.profile.world_size, job.profile.device, settings.PKB_WARM_SPARES)
        outcome, returncode = service.run(command[len(JUDGE):], workdir, heartbeat, deadline, f"job {job.pk}")
    else:
        outcome, returncode = supervise(command, workdir, heartbeat, deadline, f"job {job.pk}")
    tail = (workdir / "judge.log").read_bytes()[-TAIL:].decode("utf-8", "replace")
    logs = [{"role": "judge", "rank": None, "stdout": tail, "stderr": ""}]
    if outcome == "lease_lost":
        return None, {"message": "lease lost while judging", "logs": logs}
    if outcome == "timeout":
        return None, {"message": f"judge exceeded the job timeout ({settings.PKB_JOB_TIMEOUT_SECONDS} s)",
                      "logs": logs}
    if returncode != 0:
        return None, {"message": f"judge exited with status {returncode}", "logs": logs}
    try:
        document = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, {"message": f"judge wrote no readable result: {exc}", "logs": logs}
    if not isinstance(document, dict) or document.get("verdict") not in VERDICTS:
        return None, {"message": "judge result has no known verdict", "logs": logs}
    document.setdefault("wall_s", round(time.monotonic() - started, 3))
    return document, None


def supervise(command: list[str], workdir: Path, heartbeat, deadline: float, what: str) -> tuple[str, int | None]:
    """Run the judge (output to workdir/judge.log) and wait for it, renewing the lease with ``heartbeat()``; kill its
    whole process group on the deadline (time.monotonic()) or a lost lease. Returns (exited | timeout | lease_lost,
    the judge's exit status)."""
    with open(workdir / "judge.log", "wb") as logfile:
        process = subprocess.Popen(command, cwd=str(settings.BASE_DIR), env=_judge_env(workdir), stdout=logfile,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                   preexec_fn=_die_with_parent)

        def wait(timeout: float) -> int | None:
            try:
                return process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                return None

        return watch(wait, lambda: _kill(process, workdir), heartbeat, deadline, what)


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


def _kill(process: subprocess.Popen, tmp: Path) -> int | None:
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


def _die_with_parent() -> None:
    """In the judge's child process: receive SIGKILL when the worker thread that started it dies."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _judge_env(workdir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k in PASS_ENV or k.startswith(PASS_PREFIXES)}
    env["PYTHONPATH"] = str(settings.BASE_DIR)
    env["TMPDIR"] = str(workdir)
    env.setdefault("PATH", "/usr/bin:/bin")
    return env


_workspace: workspace.Workspace | None = None
_workspace_lock = threading.Lock()


def _work_root() -> str:
    """This worker process's own directory under PKB_WORK_DIR (leaderboard/workspace.py), locked while it lives."""
    global _workspace
    with _workspace_lock:
        if _workspace is None:
            _workspace = workspace.claim(settings.PKB_WORK_DIR, WORKER_ID)
            atexit.register(workspace.release, _workspace)  # a crash skips this: the next worker sweeps it
        return _workspace.path


def recover_dead_workers() -> dict:
    """What a worker that died without cleaning up left on this host: its processes and scratch, and its leases
    (ended now, so its jobs are re-queued at once instead of when their leases expire). Run at boot and by the
    reaper."""
    return workspace.recover_dead(settings.PKB_WORK_DIR, release=release_leases_of)


def release_leases_of(worker: str) -> int:
    """End every lease ``worker`` holds (it is known dead) and re-queue its jobs and feedback runs as the reaper
    would when the leases expire. Returns how many it held."""
    from django.utils import timezone

    from leaderboard.feedback import services as feedback_services
    from leaderboard.feedback.models import FeedbackRun
    from leaderboard.models import EvaluationJob

    past = timezone.now() - timedelta(seconds=1)
    held = sum(model.objects.filter(status="running", lease_owner=worker).update(lease_expires_at=past)
               for model in (EvaluationJob, FeedbackRun))
    if held:
        services.jobs_reap()
        feedback_services.runs_reap()
    return held


# --- the reaper, run periodically inside workers and by `manage.py reap_jobs` --------------------------------------

class Reaper(threading.Thread):
    """Calls ``reap`` (services.jobs_reap unless given: the feedback worker passes its own) every
    PKB_REAPER_INTERVAL_SECONDS until stopped; a failed pass is logged and the next one runs as planned."""

    def __init__(self, interval: float | None = None, reap=None, name: str = "pkb-reaper",
                 logger: logging.Logger | None = None, what: str = "reaper"):
        super().__init__(name=name, daemon=True)
        self.interval = interval or settings.PKB_REAPER_INTERVAL_SECONDS
        self.reap = reap or (lambda: services.jobs_reap())  # looked up at each pass, as before
        self.log = logger or log
        self.what = what
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                close_old_connections()
                recover_dead_workers()
                self.reap()
            except Exception:
                self.log.exception("%s pass failed", self.what)
            self.stopped.wait(self.interval)

    def stop(self) -> None:
        self.stopped.set()
