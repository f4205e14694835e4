"""One bootstrap for every dramatiq entry point of the site: the jobs' worker (leaderboard/jobs/actors.py), the feedback
worker (leaderboard/feedback/actors.py, leaderboard/feedback/worker.py) and the embedded one of ``manage.py
runserver_with_worker``.

Importing it sets Django up when nothing has (the dramatiq CLI imports an entry module first; the settings configure the
broker, django_dramatiq's). Each entry point then registers what it runs beside a worker with :func:`boot`: its reaper
thread, its queues, what to do once at boot; one :class:`WorkerMiddleware` on the broker runs them all, after deciding
the candidate sandbox once (leaderboard/jobs/sandbox_gate.py, check_sandbox) before the worker takes any message, then
locking the worker's GPUs (``PKB_GPUS``, leaderboard/jobs/gpus.py) and checking its host against the CUDA profiles it
serves (leaderboard/jobs/host_gate.py). A refusal is announced with ``worker_refused`` (leaderboard/jobs/signals.py):
the ops app (above every app, which none imports) connects it to the worker's record (leaderboard/ops/apps.py,
leaderboard/ops/heartbeat.py).

    dramatiq leaderboard.jobs.actors leaderboard.feedback.worker --queues gpu-h200x8 feedback-gpu-h200x8
    PKB_GPUS=3 dramatiq leaderboard.jobs.actors --queues gpu-h200x1 --processes 1 --threads 1   (docs/site.md: pinned)
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger("leaderboard.worker")


def setup_django() -> None:
    """Set Django up unless it is (or is being) set up: an entry point imported by Django's own loading (an app's
    ready) must not start a second, re-entrant populate."""
    import django
    from django.apps import apps

    if not apps.ready and not apps.loading:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
        django.setup()


setup_django()

import dramatiq  # noqa: E402
from dramatiq.middleware import Middleware, MiddlewareError  # noqa: E402

from leaderboard.jobs.signals import worker_refused  # noqa: E402


class WorkerRefused(MiddlewareError):
    """A boot check said no (the sandbox, the GPUs, the host): the worker does not start. It must be a MiddlewareError:
    dramatiq's before_worker_boot only logs any other exception, and the worker would boot anyway."""


class WorkerMiddleware(Middleware):
    """Beside each worker process: the sandbox gate at boot, then each entry point's boot step and reaper thread
    (started after boot, stopped at shutdown). One per broker, whatever entry points the worker loaded."""

    def __init__(self):
        self.parts: dict[str, dict] = {}  # entry point name -> {"reaper": factory | None, "on_boot": callable | None}
        self.running: list = []
        self.gpu_locks = None  # this worker's GPUs (PKB_GPUS), locked while it runs: leaderboard/jobs/gpus.py

    def before_worker_boot(self, broker, worker):
        # Every queue runs strangers' code: the whole sandbox or no worker (decided once per process).
        from leaderboard.jobs import gpus, host_gate
        from leaderboard.jobs.build_routing import is_build_queue
        from leaderboard.jobs.sandbox_gate import check_sandbox

        queues = worker.consumer_whitelist or broker.get_declared_queues()
        try:
            check_sandbox(queues)
            # No two workers on one GPU, and none judging on GPUs its profiles do not describe (the host record).
            if not (
                queues and all(is_build_queue(q) for q in queues)
            ):  # a build worker holds no GPU (its stage hides them)
                self.gpu_locks = gpus.claim_configured()
            host_gate.check_host(queues, threads=getattr(worker, "worker_threads", 1))
        except MiddlewareError as exc:
            self._release_gpus()
            # the staff's Workers page shows why (leaderboard/ops/heartbeat.py, refused)
            worker_refused.send(sender=WorkerMiddleware, queues=queues, reason=str(exc))
            raise
        except Exception as exc:  # a check that could not decide (no database, ...) is a no: fail closed
            self._release_gpus()
            worker_refused.send(sender=WorkerMiddleware, queues=queues, reason=str(exc))
            raise WorkerRefused(str(exc)) from exc

    def _release_gpus(self):
        if self.gpu_locks is not None:
            self.gpu_locks.release()
            self.gpu_locks = None

    def after_worker_boot(self, broker, worker):
        for name, part in self.parts.items():
            if part["on_boot"] is not None:
                try:
                    part["on_boot"]()
                except Exception:
                    log.exception("%s: boot step failed", name)
            if part["reaper"] is not None:
                reaper = part["reaper"]()
                reaper.start()
                self.running.append(reaper)

    def before_worker_shutdown(self, broker, worker):
        for reaper in self.running:
            reaper.stop()
        self.running = []

    def after_worker_shutdown(self, broker, worker):
        self._release_gpus()  # its jobs have ended: another worker may take these GPUs


def middleware(broker=None) -> WorkerMiddleware:
    """The broker's WorkerMiddleware, added the first time."""
    broker = broker or dramatiq.get_broker()
    for found in broker.middleware:
        if isinstance(found, WorkerMiddleware):
            return found
    added = WorkerMiddleware()
    broker.add_middleware(added)
    return added


def boot(name: str, reaper=None, declare=None, on_boot=None, broker=None) -> WorkerMiddleware:
    """An entry point's part of a worker: ``reaper()`` makes its reaper thread (leaderboard/jobs/runner.py, Reaper),
    ``declare(broker)`` declares its queues now, ``on_boot()`` runs once after the worker booted."""
    broker = broker or dramatiq.get_broker()
    found = middleware(broker)
    found.parts[name] = {"reaper": reaper, "on_boot": on_boot}
    if declare is not None:
        declare(broker)
    return found


def start_worker(queues: list[str], threads: int = 1) -> dramatiq.Worker:
    """An in-process worker on the configured broker (runserver_with_worker): the same middleware and gate as the
    dramatiq CLI's, consuming ``queues``."""
    broker = dramatiq.get_broker()
    middleware(broker)
    for queue in queues:
        broker.declare_queue(queue)
    worker = dramatiq.Worker(broker, queues=set(queues), worker_threads=threads)
    worker.start()
    return worker
