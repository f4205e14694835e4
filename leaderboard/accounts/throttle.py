"""Throttling of what can be guessed or flooded: the login form (django-axes counts the failures; this module says
when a locked-out client may retry), sign-up, and refused API tokens (a sliding window per client address in the
ThrottleEvent table). docs/site.md, "Throttling", lists the limits and their settings."""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import render
from django.utils import timezone

from leaderboard.accounts.models import ThrottleEvent

log = logging.getLogger(__name__)
_unbelieved_proxy_reported = False


def client_ip(request) -> str:
    """The client's address: REMOTE_ADDR, or with PKB_TRUSTED_PROXIES = n (nginx in front: 1) the n-th address from
    the right of X-Forwarded-For, the one the nearest trusted proxy saw. Addresses further left are the client's to
    write, so they are never read (a forged header would give each guess a fresh allowance)."""
    remote = request.META.get("REMOTE_ADDR") or "0.0.0.0"
    hops = settings.PKB_TRUSTED_PROXIES
    if hops:
        chain = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
        if len(chain) >= hops:
            remote = chain[-hops]
    elif request.META.get("HTTP_X_FORWARDED_FOR"):
        _report_unbelieved_proxy(remote)
    try:
        return str(ipaddress.ip_address(remote))
    except ValueError:
        return "0.0.0.0"


def _report_unbelieved_proxy(peer: str) -> None:
    """Once per process, an error in the log when a forwarded request comes from a loopback or private peer while no
    proxy is believed: the likely sign of a proxy (nginx, Docker's userland proxy) that PKB_TRUSTED_PROXIES=0 leaves
    unread, under which every client is counted as that peer. A client connecting directly cannot send from there."""
    global _unbelieved_proxy_reported
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return
    if _unbelieved_proxy_reported or not (address.is_loopback or address.is_private):
        return
    _unbelieved_proxy_reported = True
    log.error(
        "a request forwarded by %s (X-Forwarded-For set) while PKB_TRUSTED_PROXIES=0: if a proxy stands in "
        "front of this process, every client counts as %s and one client's wrong passwords lock out all "
        "(docs/site.md, Throttling)",
        peer,
        peer,
    )


def require_stated_proxies() -> None:
    """The production web process's start-up check (leaderboard/wsgi.py): with any database but the embedded SQLite,
    PKB_TRUSTED_PROXIES must be stated. No default is safe in both layouts: 0 behind nginx counts every client as
    nginx's one address, so one client's wrong passwords lock everyone out; 1 with clients connecting directly lets
    each write its own address, a fresh allowance per guess. The operator knows which layout runs; the site cannot."""
    if settings.PKB_TRUSTED_PROXIES_STATED or settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        return
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(
        "PKB_TRUSTED_PROXIES is not set: say how many proxies stand between the clients and this process (1 behind "
        "nginx or any one TLS proxy, 0 when clients connect to it directly). The log-in lock-out counts failures per "
        "client address: set too low, every client counts as the proxy's one address and one client's wrong "
        "passwords lock everyone out; set too high, clients choose their own address. docs/site.md, Throttling."
    )


@dataclasses.dataclass(frozen=True)
class Limit:
    scope: str
    count: int
    window: timedelta


def signup_limit() -> Limit:
    return Limit("signup", settings.PKB_SIGNUP_LIMIT, timedelta(minutes=settings.PKB_SIGNUP_WINDOW_MINUTES))


def token_limit() -> Limit:
    return Limit("token", settings.PKB_TOKEN_FAILURE_LIMIT, timedelta(minutes=settings.PKB_TOKEN_WINDOW_MINUTES))


def retry_at(limit: Limit, key: str, now: datetime | None = None) -> datetime | None:
    """When the client may try again, if it has spent the window's allowance; None while it may go on."""
    now = now or timezone.now()
    recent = list(
        ThrottleEvent.objects.filter(scope=limit.scope, key=key, created_at__gt=now - limit.window)
        .order_by("-created_at")
        .values_list("created_at", flat=True)[: limit.count]
    )
    if len(recent) < limit.count:
        return None
    # The allowance frees when the oldest of the last ``count`` events leaves the window.
    return recent[-1] + limit.window


def record(limit: Limit, key: str, now: datetime | None = None) -> None:
    now = now or timezone.now()
    ThrottleEvent.objects.create(scope=limit.scope, key=key, created_at=now)
    # Old rows are no longer read: drop them now and then (one in a while, cheaply, on the writer's request).
    ThrottleEvent.objects.filter(scope=limit.scope, key=key, created_at__lte=now - limit.window).delete()


def refusal(request, until: datetime, what: str):
    """429 with Retry-After and a sentence saying when: JSON under /api/, a page elsewhere."""
    seconds = max(1, int((until - timezone.now()).total_seconds()) + 1)
    message = (
        f"Too many {what} from your address. Try again after {until:%Y-%m-%d %H:%M:%S} UTC (in {_duration(seconds)})."
    )
    if request.path.startswith("/api/") or "application/json" in request.META.get("HTTP_ACCEPT", ""):
        response = JsonResponse({"detail": message, "retry_after": seconds, "retry_at": until.isoformat()}, status=429)
    else:
        response = render(request, "registration/throttled.html", {"message": message, "until": until}, status=429)
    response["Retry-After"] = str(seconds)
    return response


def _duration(seconds: int) -> str:
    if seconds < 90:
        return f"{seconds} s"
    return f"{round(seconds / 60)} min"


def lockout_response(request, original_response=None, credentials=None):
    """AXES_LOCKOUT_CALLABLE: the login form's answer while the client is locked out, saying until when. The
    lockout lasts AXES_COOLOFF_TIME from the failure that reached the limit (failures while locked out do not move
    it: AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT is off)."""
    from axes.models import AccessAttempt

    ip = getattr(request, "axes_ip_address", None) or client_ip(request)
    last = (
        AccessAttempt.objects.filter(ip_address=ip)
        .order_by("-attempt_time")
        .values_list("attempt_time", flat=True)
        .first()
    )
    until = (last or timezone.now()) + settings.AXES_COOLOFF_TIME
    return refusal(request, until, "failed log-ins")
