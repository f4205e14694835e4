"""A worker process's own Prometheus metrics, served on ``PKB_WORKER_METRICS_PORT`` (unset: not served) at
``PKB_WORKER_METRICS_ADDR`` (127.0.0.1 by default; the scrape config: docs/site.md). The site's /metrics has the
platform's view from the database (leaderboard/ops/metrics.py); these are what only the process knows: the messages
it took, how long each held it, whether it is busy now. A worker runs one process (``--processes 1``), so one registry
per process is the whole worker and prometheus_client's multiprocess mode is not needed."""

from __future__ import annotations

import logging
import os
import socket
import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

log = logging.getLogger("leaderboard.ops")
REGISTRY = CollectorRegistry(auto_describe=True)
# Seconds one message held the worker: a judged job on a GPU host is seconds to hours.
BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 10800)
MESSAGES = Counter(
    "pkb_worker_messages",
    "Messages this worker process finished, by actor and outcome",
    ["actor", "outcome"],
    registry=REGISTRY,
)
SECONDS = Histogram(
    "pkb_worker_message_seconds", "Seconds one message held this worker", ["actor"], buckets=BUCKETS, registry=REGISTRY
)
BUSY = Gauge("pkb_worker_busy", "Messages this worker process is working on now", registry=REGISTRY)
INFO = Gauge(
    "pkb_worker_info",
    "This worker process (always 1), labelled with what it is",
    ["worker", "host", "gpus", "queues"],
    registry=REGISTRY,
)
_started: dict[str, float] = {}
_served: list = []


def serve(queues) -> int | None:
    """Start the exposition server when configured; returns its port (None: not configured, or it could not bind,
    which is logged and never stops the worker)."""
    from django.conf import settings

    from leaderboard.jobs.gpus import spec
    from leaderboard.jobs.judge_process import WORKER_ID

    INFO.labels(WORKER_ID, socket.gethostname(), spec(), " ".join(sorted(queues))).set(1)
    port = settings.PKB_WORKER_METRICS_PORT
    if not port or _served:
        return None
    try:
        _served.append(start_http_server(port, addr=settings.PKB_WORKER_METRICS_ADDR, registry=REGISTRY))
    except OSError as exc:
        log.error("worker metrics not served on %s:%s: %s", settings.PKB_WORKER_METRICS_ADDR, port, exc)
        return None
    log.info("worker metrics on http://%s:%s/metrics (pid %s)", settings.PKB_WORKER_METRICS_ADDR, port, os.getpid())
    return port


def started(message) -> None:
    _started[message.message_id] = time.monotonic()
    BUSY.inc()


def finished(message, exception) -> None:
    began = _started.pop(message.message_id, None)
    if began is None:  # skipped before it started
        MESSAGES.labels(message.actor_name, "skipped").inc()
        return
    BUSY.dec()
    SECONDS.labels(message.actor_name).observe(time.monotonic() - began)
    MESSAGES.labels(message.actor_name, "failed" if exception is not None else "done").inc()
