"""The operator's endpoints: /metrics (Prometheus, for a token or allowed addresses), /readyz (for a load balancer:
the database, its migrations and the broker) and the staff's Workers page. /healthz stays the pages' (alive only)."""

from __future__ import annotations

import hmac
import ipaddress
import logging

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.cache import never_cache

log = logging.getLogger("leaderboard.ops")
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # Prometheus' text exposition format


def metrics_allowed(request) -> bool:
    """A configured bearer token, or a client address inside PKB_METRICS_ALLOWED_IPS; nobody when neither is set."""
    from leaderboard.accounts.throttle import client_ip

    token = settings.PKB_METRICS_TOKEN
    given = request.META.get("HTTP_AUTHORIZATION", "")
    if token and given.startswith("Bearer ") and hmac.compare_digest(given[len("Bearer ") :].encode(), token.encode()):
        return True
    address = ipaddress.ip_address(client_ip(request))
    return any(address in network for network in settings.PKB_METRICS_ALLOWED_NETWORKS)


@never_cache
def metrics(request):
    if not metrics_allowed(request):
        response = HttpResponse(
            "metrics need a bearer token or an allowed address\n", status=403, content_type="text/plain"
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    from leaderboard.ops.metrics import exposition

    return HttpResponse(exposition(), content_type=CONTENT_TYPE)


def _database() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return "ok"


def _migrations() -> str:
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        raise RuntimeError(f"{len(plan)} migrations not applied, first {plan[0][0].app_label}.{plan[0][0].name}")
    return "ok"


def _broker() -> str:
    """A round trip to the broker the site sends jobs through (RabbitMQ: the connection's event loop; Redis: PING).
    A stale connection is dropped and opened once more before the broker is called unreachable."""
    import dramatiq

    broker = dramatiq.get_broker()
    for attempt in (1, 2):
        try:
            if hasattr(broker, "get_queue_message_counts"):  # RabbitMQ
                broker.connection.process_data_events(time_limit=0)
            elif hasattr(broker, "client"):  # Redis
                broker.client.ping()
            return "ok"
        except Exception:
            if attempt == 2 or not hasattr(broker, "get_queue_message_counts"):
                raise
            del broker.connection  # dramatiq closes it; the next access opens a fresh one
    return "ok"


@never_cache
def readyz(request):
    """200 when this process can serve: the database answers and has every migration, the broker answers; else 503
    naming what is not ready (the reasons are the operator's, so only the check's name and its error class show)."""
    checks, ready = {}, True
    for name, check in (("database", _database), ("migrations", _migrations), ("broker", _broker)):
        try:
            checks[name] = check()
        except Exception as exc:  # noqa: BLE001 - not ready, whatever the cause
            log.warning("readyz: %s not ready: %s", name, exc)
            checks[name] = f"failed: {type(exc).__name__}"
            ready = False
    return JsonResponse({"ready": ready, "checks": checks}, status=200 if ready else 503)


def _current_work(worker_ids) -> dict[str, list[str]]:
    from leaderboard.feedback.models import FeedbackRun
    from leaderboard.jobs.models import EvaluationJob

    work: dict[str, list[str]] = {}
    for pk, owner, building in EvaluationJob.objects.filter(
        status=EvaluationJob.RUNNING, lease_owner__in=worker_ids
    ).values_list("pk", "lease_owner", "build_status"):
        work.setdefault(owner, []).append(f"job {pk}" + (" (building)" if building == EvaluationJob.BUILDING else ""))
    for pk, owner in FeedbackRun.objects.filter(status=FeedbackRun.RUNNING, lease_owner__in=worker_ids).values_list(
        "pk", "lease_owner"
    ):
        work.setdefault(owner, []).append(f"feedback run {pk}")
    return work


def workers_page(request):
    """Every worker the site has heard from in the last week: live ones first, each with its host, GPU set,
    profiles, current work, last heartbeat, boot gates, and the reason of a refusal at boot. Staff only."""
    from django.http import Http404

    from leaderboard.ops.models import WorkerRecord

    if not (request.user.is_authenticated and request.user.is_staff):
        raise Http404("no such page")
    records = list(WorkerRecord.objects.all())
    work = _current_work([r.worker for r in records])
    now = timezone.now()
    silent_after = 3 * settings.PKB_WORKER_HEARTBEAT_SECONDS
    rows = []
    for record in records:
        age = (now - record.last_heartbeat_at).total_seconds() if record.last_heartbeat_at else None
        live = record.state == WorkerRecord.RUNNING and age is not None and age <= silent_after
        status = "live" if live else ("silent" if record.state == WorkerRecord.RUNNING else record.get_state_display())
        rows.append({"record": record, "age": age, "live": live, "status": status, "work": work.get(record.worker, [])})
    rows.sort(
        key=lambda row: (
            not row["live"],
            row["record"].state != WorkerRecord.REFUSED,
            -row["record"].booted_at.timestamp(),
        )
    )
    return render(
        request,
        "ops/workers.html",
        {"rows": rows, "silent_after": silent_after, "live": sum(row["live"] for row in rows)},
    )
