"""Reads of accounts: a user's tokens and how much of their quota is used."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from leaderboard.accounts.models import ApiToken, QuotaCharge

# Counters of a submitter's evaluations that wait (queued or running), each ``count(submitter) -> int``: the apps
# whose rows they are register them at start-up (AppConfig.ready; the jobs app its evaluation jobs), so accounts,
# below them (docs/architecture.md, the apps' order), never imports them.
_WAITING: list = []


def register_waiting(count) -> None:
    """Count ``count(submitter)`` among the submitter's evaluations queued or running (the concurrent quota)."""
    if count not in _WAITING:
        _WAITING.append(count)


def tokens_of(user) -> list[ApiToken]:
    return list(ApiToken.objects.filter(submitter__user=user).order_by("-created_at"))


def quota_status(submitter) -> dict:
    from datetime import timedelta

    from django.utils import timezone

    now = timezone.now()
    usage = quota_usage(submitter, now)
    limits = submitter.limits()
    oldest = (
        QuotaCharge.objects.filter(
            submitter=submitter, refunded_at__isnull=True, created_at__gt=now - timedelta(days=1)
        )
        .order_by("created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    return {
        "usage": usage,
        "limits": limits,
        "daily_left": max(0, limits["daily"] - usage["daily"]),
        "concurrent_left": max(0, limits["concurrent"] - usage["concurrent"]),
        "total_left": max(0, limits["total"] - usage["total"]),
        "next_daily_slot": oldest + timedelta(days=1) if oldest and usage["daily"] >= limits["daily"] else None,
    }


def quota_usage(submitter, now=None) -> dict:
    """A submitter's live charges: in the rolling day, in total, and jobs queued or running (services.quota_reserve
    checks them against the limits; the account page shows them)."""
    now = now or timezone.now()
    live = QuotaCharge.objects.filter(submitter=submitter, refunded_at__isnull=True)
    return {
        "daily": live.filter(created_at__gt=now - dt.timedelta(days=1)).count(),
        "total": live.count(),
        "concurrent": sum(count(submitter) for count in _WAITING),
    }
