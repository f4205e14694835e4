"""A worker process's record on the site: written when it boots (its gates) or refuses to (the reason), renewed by a
heartbeat thread while it runs, marked stopped when it shuts down; the Workers page and /metrics read it.

:class:`WorkerOps` is a dramatiq middleware in every broker the settings build (DRAMATIQ_BROKER). Its hooks run only in
a worker process, so the web process never writes a record. The boot gates themselves are
leaderboard/jobs/worker_boot.py's (WorkerMiddleware): they announce a refusal (``worker_refused``, connected in
leaderboard/ops/apps.py) and :func:`refused` records it. With ``PKB_WORKER_METRICS_PORT`` set, the worker also serves
its own Prometheus metrics on that port (leaderboard/ops/worker_metrics.py).

Recording never stops a worker: a database that cannot be written is logged; the gates decide whether it runs.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from datetime import timedelta

from dramatiq.middleware import Middleware

log = logging.getLogger("leaderboard.ops")
KEEP = timedelta(days=7)


def _profiles_of(queues) -> list[str]:
    """The profiles a worker's queues serve: ``gpu-h200x8``, ``build-gpu-h200x8`` and ``feedback-gpu-h200x8`` are
    all ``gpu-h200x8``."""
    found = []
    for queue in sorted(queues or ()):
        for prefix in ("build-", "feedback-"):
            if queue.startswith(prefix):
                queue = queue[len(prefix) :]
        if queue not in found:
            found.append(queue)
    return found


def _write(queues, **fields) -> None:
    from django.db import connection
    from django.utils import timezone

    from leaderboard.jobs.gpus import spec
    from leaderboard.jobs.judge_process import WORKER_ID
    from leaderboard.ops.models import WorkerRecord

    now = timezone.now()
    defaults = {
        "hostname": socket.gethostname(),
        "pid": os.getpid(),
        "gpus": spec(),
        "queues": sorted(queues or ()),
        "profiles": _profiles_of(queues),
        "booted_at": now,
        **fields,
    }
    try:
        WorkerRecord.objects.update_or_create(worker=WORKER_ID, defaults=defaults)
        # Workers silent for a week (stopped, refused, or killed and never marked) leave the page and the metrics.
        WorkerRecord.objects.filter(booted_at__lt=now - KEEP, last_heartbeat_at__isnull=True).delete()
        WorkerRecord.objects.filter(last_heartbeat_at__lt=now - KEEP).delete()
    except Exception:
        log.exception("could not write this worker's record")
    finally:
        if not connection.in_atomic_block:  # (an embedded worker started inside a caller's transaction keeps it)
            connection.close()  # a worker's session is not held between writes


def refused(queues, reason: str) -> None:
    """A boot gate said no: the record says which and why (the worker does not start)."""
    from django.utils import timezone

    _write(
        queues,
        state="refused",
        refusal=reason[:4000],
        gates=[{"gate": "boot", "ok": False, "detail": reason[:500]}],
        stopped_at=timezone.now(),
        last_heartbeat_at=None,
    )


def _gates() -> list[dict]:
    """What the boot gates decided, as the worker process keeps it (leaderboard/jobs/worker_boot.py ran them all)."""
    from django.conf import settings

    from leaderboard.jobs import gpus, host_gate, sandbox_gate

    support = sandbox_gate._decided.get("support") or {}
    gates = [
        {
            "gate": "sandbox",
            "ok": bool(support.get("complete")) or settings.PKB_SANDBOX_OFF,
            "detail": support.get("summary", "not decided")
            + (" (PKB_SANDBOX=off)" if settings.PKB_SANDBOX_OFF else ""),
        }
    ]
    pinned = gpus.spec()
    gates.append({"gate": "gpus", "ok": True, "detail": f"GPUs {pinned} locked" if pinned else "not pinned"})
    record = host_gate._records.get(pinned) or {}
    gates.append(
        {
            "gate": "host",
            "ok": "error" not in record,
            "detail": record.get("error")
            or f"{record.get('host', '?')}: torch {record.get('torch', '?')}, CUDA {record.get('cuda') or 'none'}",
        }
    )
    return gates


class Heartbeat(threading.Thread):
    """Renews this worker's ``last_heartbeat_at`` every ``interval`` seconds until stopped."""

    def __init__(self, interval: float):
        super().__init__(name="pkb-worker-heartbeat", daemon=True)
        self.interval = interval
        self.stopped = threading.Event()

    def run(self) -> None:
        from django.db import connection
        from django.utils import timezone

        from leaderboard.jobs.judge_process import WORKER_ID
        from leaderboard.ops.models import WorkerRecord

        while not self.stopped.wait(self.interval):
            try:
                WorkerRecord.objects.filter(worker=WORKER_ID).update(
                    last_heartbeat_at=timezone.now(), state=WorkerRecord.RUNNING
                )
            except Exception:
                log.exception("heartbeat not written")
            finally:
                connection.close()

    def stop(self) -> None:
        self.stopped.set()


class WorkerOps(Middleware):
    """The record, the heartbeat and the worker's own metrics, beside every worker the dramatiq CLI (or
    runserver_with_worker) starts."""

    def __init__(self):
        self.heartbeat: Heartbeat | None = None
        self.queues: list[str] = []

    def after_worker_boot(self, broker, worker):
        from django.conf import settings
        from django.utils import timezone

        from leaderboard.jobs import host_gate
        from leaderboard.jobs.gpus import spec
        from leaderboard.ops import worker_metrics

        self.queues = sorted(worker.consumer_whitelist or broker.get_declared_queues())
        now = timezone.now()
        _write(
            self.queues,
            state="running",
            refusal="",
            gates=_gates(),
            host=host_gate._records.get(spec()) or {},
            last_heartbeat_at=now,
            stopped_at=None,
        )
        self.heartbeat = Heartbeat(settings.PKB_WORKER_HEARTBEAT_SECONDS)
        self.heartbeat.start()
        worker_metrics.serve(self.queues)

    def before_worker_shutdown(self, broker, worker):
        from django.utils import timezone

        from leaderboard.jobs.judge_process import WORKER_ID
        from leaderboard.ops.models import WorkerRecord

        if self.heartbeat is None:
            return
        self.heartbeat.stop()
        self.heartbeat = None
        try:
            WorkerRecord.objects.filter(worker=WORKER_ID).update(state=WorkerRecord.STOPPED, stopped_at=timezone.now())
        except Exception:
            log.exception("could not mark this worker stopped")

    def before_process_message(self, broker, message):
        from leaderboard.ops import worker_metrics

        worker_metrics.started(message)

    def after_process_message(self, broker, message, *, result=None, exception=None):
        from leaderboard.ops import worker_metrics

        worker_metrics.finished(message, exception)

    after_skip_message = after_process_message
