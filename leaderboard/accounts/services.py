"""Writes of accounts: submitters, API tokens, and the evaluation quota (reserved under the submitter's row lock)."""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.utils import timezone

from leaderboard.accounts.models import ApiToken, QuotaCharge, Submitter
from leaderboard.accounts.selectors import quota_usage


class QuotaExceeded(Exception):
    def __init__(self, message: str, next_free_at=None):
        super().__init__(message)
        self.message = message
        self.next_free_at = next_free_at


class NotAllowed(Exception):
    pass


def submitter_for(user) -> Submitter:
    submitter, _ = Submitter.objects.get_or_create(user=user)
    return submitter


def token_create(submitter: Submitter, name: str, scopes: list[str], days: int = 90) -> tuple[ApiToken, str]:
    """A new token; the raw value is returned once and never stored."""
    bad = [s for s in scopes if s not in ApiToken.SCOPES]
    if bad or not scopes:
        raise ValueError(f"scopes must be a non-empty subset of {ApiToken.SCOPES}")
    if not 1 <= days <= 366:
        raise ValueError("a token lives 1 to 366 days")
    prefix = secrets.token_hex(4)
    raw = f"pkb_{prefix}_{secrets.token_urlsafe(32)}"
    token = ApiToken.objects.create(
        submitter=submitter,
        name=name[:100] or "token",
        prefix=prefix,
        digest=ApiToken.hash(raw),
        scopes=sorted(set(scopes)),
        expires_at=timezone.now() + timedelta(days=days),
    )
    return token, raw


def token_authenticate(raw: str) -> ApiToken | None:
    """The active token for a raw ``pkb_<prefix>_<secret>`` value, or None; records its last use."""
    parts = raw.split("_", 2)
    if len(parts) != 3 or parts[0] != "pkb":
        return None
    token = ApiToken.objects.select_related("submitter__user").filter(prefix=parts[1]).first()
    if token is None or not secrets.compare_digest(token.digest, ApiToken.hash(raw)) or not token.is_active():
        return None
    if not token.submitter.user.is_active:
        return None
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token


def token_revoke(token: ApiToken) -> None:
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())


def quota_reserve(submitter: Submitter, units: int, now=None) -> None:
    """Charge ``units`` evaluations, or raise QuotaExceeded. Call inside transaction.atomic().

    The submitter row is locked (SELECT ... FOR UPDATE) before counting, so two uploads of one user serialise here and
    cannot both pass a check that only one of them fits (no count-then-insert race). The caller inserts the charges
    in the same transaction.
    """
    if units <= 0:
        return
    now = now or timezone.now()
    Submitter.objects.select_for_update().filter(pk=submitter.pk).first()
    limits = submitter.limits()
    usage = quota_usage(submitter, now)
    if usage["concurrent"] + units > limits["concurrent"]:
        raise QuotaExceeded(
            f"this upload needs {units} evaluations and {usage['concurrent']} of yours are queued or running; "
            f"at most {limits['concurrent']} may wait at once. Next free slot: when "
            f"{usage['concurrent'] + units - limits['concurrent']} of them finish."
        )
    if usage["daily"] + units > limits["daily"]:
        free_at = (
            _daily_free_at(submitter, usage["daily"] + units - limits["daily"], now)
            if units <= limits["daily"]
            else None
        )
        when = f"next free slot at {free_at:%Y-%m-%d %H:%M} UTC" if free_at else "it exceeds your daily limit"
        raise QuotaExceeded(
            f"this upload needs {units} evaluations; {usage['daily']} of your {limits['daily']} "
            f"per 24 hours are used ({when}).",
            free_at,
        )
    if usage["total"] + units > limits["total"]:
        raise QuotaExceeded(
            f"this upload needs {units} evaluations; {usage['total']} of your {limits['total']} in "
            f"total are used. Ask the staff for more."
        )


def _daily_free_at(submitter: Submitter, excess: int, now):
    """When ``excess`` charges of the rolling 24-hour window will have left it."""
    times = list(
        QuotaCharge.objects.filter(
            submitter=submitter, refunded_at__isnull=True, created_at__gt=now - timedelta(days=1)
        )
        .order_by("created_at")
        .values_list("created_at", flat=True)[:excess]
    )
    return times[-1] + timedelta(days=1) if len(times) == excess else None


def quota_refund(job) -> None:
    """The platform failed this run of ``job`` (an evaluation job): its charge no longer counts."""
    QuotaCharge.objects.filter(job=job, run=job.run, refunded_at__isnull=True).update(refunded_at=timezone.now())
