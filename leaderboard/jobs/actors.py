"""Dramatiq actors. A GPU host runs, for its hardware profile's queue:

    dramatiq leaderboard.jobs.actors --queues gpu-h200x8 --processes 1 --threads 1

(prefetch 1 is forced by leaderboard.jobs.broker.OneMessageAtATime). The message carries only the job id; the actor
claims the EvaluationJob row by compare-and-swap, so duplicate or stale messages are harmless. The worker process
also runs the reaper thread, so expired leases are re-queued even when no web process is up.
"""
from __future__ import annotations

import logging
import os

import django
from django.apps import apps

if not apps.ready:  # imported by the dramatiq CLI: set Django up (this also configures the broker)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
    django.setup()

import dramatiq  # noqa: E402
from dramatiq.middleware import Middleware  # noqa: E402

from leaderboard.jobs.broker import ACTOR_NAME  # noqa: E402
from leaderboard.jobs.sandbox_gate import SandboxUnavailableOnHost, check_sandbox  # noqa: E402,F401

log = logging.getLogger("leaderboard.jobs.actors")


# No Retries or TimeLimit middleware is installed: the reaper retries, the runner enforces the job timeout.
@dramatiq.actor(actor_name=ACTOR_NAME, queue_name="default")
def evaluate_job(job_id: int) -> None:
    from leaderboard.jobs.runner import run_job

    outcome = run_job(int(job_id))
    log.info("job %s: %s", job_id, outcome)


class ReaperMiddleware(Middleware):
    """Checks the candidate sandbox, then runs the lease reaper beside each worker process (after sweeping what dead
    workers of this host left behind)."""

    def __init__(self):
        self.reaper = None

    def before_worker_boot(self, broker, worker):
        check_sandbox(worker.consumer_whitelist or broker.get_declared_queues())

    def after_worker_boot(self, broker, worker):
        from leaderboard.jobs.runner import Reaper, recover_dead_workers

        try:
            recovered = recover_dead_workers()
            if recovered["workers"]:
                log.warning("recovered after dead workers: %s", recovered)
        except Exception:
            log.exception("could not sweep dead workers' directories")
        self.reaper = Reaper()
        self.reaper.start()

    def before_worker_shutdown(self, broker, worker):
        if self.reaper is not None:
            self.reaper.stop()


def declare_profile_queues(broker=None) -> list[str]:
    """Declare one queue per hardware profile so ``--queues <profile>`` finds a consumer to start."""
    from leaderboard.catalogue.models import HardwareProfile

    broker = broker or dramatiq.get_broker()
    names = [n.strip() for n in os.environ.get("PKB_QUEUES", "").split(",") if n.strip()]
    try:
        names += list(HardwareProfile.objects.values_list("slug", flat=True))
    except Exception:  # no database yet (before migrate), or none reachable
        log.warning("could not read hardware profiles; declaring only PKB_QUEUES and the default profile")
    from django.conf import settings

    names.append(settings.PKB_DEFAULT_PROFILE)
    for name in dict.fromkeys(names):
        broker.declare_queue(name)
    return list(dict.fromkeys(names))


if os.environ.get("PKB_ACTORS_NO_SETUP") != "1":
    _broker = dramatiq.get_broker()
    if not any(isinstance(m, ReaperMiddleware) for m in _broker.middleware):
        _broker.add_middleware(ReaperMiddleware())
    declare_profile_queues(_broker)
