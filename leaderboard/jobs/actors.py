"""Dramatiq actors. A GPU host runs, for its hardware profile's queue:

    dramatiq leaderboard.jobs.actors --queues gpu-h200x8 --processes 1 --threads 1

(prefetch 1 is forced by leaderboard.jobs.broker.OneMessageAtATime; Django, the broker and the middleware come from the
one worker bootstrap, leaderboard/jobs/worker_boot.py). The message carries only the job id; the actor
claims the EvaluationJob row by compare-and-swap, so duplicate or stale messages are harmless. The worker process
also runs the reaper thread, so expired leases are re-queued even when no web process is up.
"""

from __future__ import annotations

import logging
import os

import dramatiq

from leaderboard.jobs import worker_boot as bootstrap  # sets Django up when the dramatiq CLI imports this first
from leaderboard.jobs.broker import ACTOR_NAME
from leaderboard.jobs.sandbox_gate import SandboxUnavailableOnHost, check_sandbox  # noqa: F401

log = logging.getLogger("leaderboard.jobs.actors")


# No Retries or TimeLimit middleware is installed: the reaper retries, the runner enforces the job timeout.
@dramatiq.actor(actor_name=ACTOR_NAME, queue_name="default")
def evaluate_job(job_id: int) -> None:
    from leaderboard.jobs.runner import run_job

    outcome = run_job(int(job_id))
    log.info("job %s: %s", job_id, outcome)


def recover_at_boot() -> None:
    """Before the reaper's first pass: what dead workers of this host left behind (processes, scratch, leases)."""
    from leaderboard.jobs.runner import recover_dead_workers

    recovered = recover_dead_workers(boxes=True)
    if recovered["workers"] or recovered.get("boxes_cleared"):
        log.warning("recovered after dead workers: %s", recovered)


def jobs_reaper():
    from leaderboard.jobs.runner import Reaper

    return Reaper()


def declare_profile_queues(broker=None) -> list[str]:
    """Declare one queue per hardware profile so ``--queues <profile>`` finds a consumer to start."""
    from leaderboard.catalogue.models import HardwareProfile

    broker = broker or dramatiq.get_broker()
    names = [n.strip() for n in os.environ.get("PKB_QUEUES", "").split(",") if n.strip()]
    try:
        names += list(HardwareProfile.objects.values_list("slug", flat=True))
    except Exception:  # noqa: BLE001 - no database yet (before migrate), none reachable, or none allowed (a test's guard)
        log.warning("could not read hardware profiles; declaring only PKB_QUEUES and the default profile")
    from django.conf import settings

    names.append(settings.PKB_DEFAULT_PROFILE)
    for name in dict.fromkeys(names):
        broker.declare_queue(name)
    return list(dict.fromkeys(names))


if os.environ.get("PKB_ACTORS_NO_SETUP") != "1":
    # The sandbox gate, the sweep after dead workers and the lease reaper beside each worker
    # (leaderboard/jobs/worker_boot.py).
    bootstrap.boot("jobs", reaper=jobs_reaper, declare=declare_profile_queues, on_boot=recover_at_boot)
