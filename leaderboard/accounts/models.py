"""Who submits: submitters, their API tokens and the quota charges of their evaluations."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models
from django.utils import timezone


class Submitter(models.Model):
    """A user who uploads; quota overrides (null = the site's defaults)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submitter")
    display_name = models.CharField(max_length=100, blank=True)
    quota_daily = models.PositiveIntegerField(null=True, blank=True)
    quota_total = models.PositiveIntegerField(null=True, blank=True)
    quota_concurrent = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "leaderboard_submitter"  # the table this model had before the site was cut into apps

    def __str__(self) -> str:
        return self.name

    @property
    def name(self) -> str:
        return self.display_name or self.user.get_username()

    def limits(self) -> dict:
        return {
            "daily": self.quota_daily if self.quota_daily is not None else settings.PKB_QUOTA_DAILY,
            "total": self.quota_total if self.quota_total is not None else settings.PKB_QUOTA_TOTAL,
            "concurrent": self.quota_concurrent if self.quota_concurrent is not None else settings.PKB_QUOTA_CONCURRENT,
        }


class ApiToken(models.Model):
    """A bearer token ``pkb_<prefix>_<secret>``; only the SHA-256 of the whole token is stored."""

    SCOPES = ("read", "submit")
    submitter = models.ForeignKey(Submitter, on_delete=models.CASCADE, related_name="tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64)
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "leaderboard_apitoken"  # the table this model had before the site was cut into apps
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} (pkb_{self.prefix}_...)"

    @staticmethod
    def hash(raw: str) -> str:
        return hashlib.sha256(raw.encode()).hexdigest()

    def is_active(self, now=None) -> bool:
        now = now or timezone.now()
        return self.revoked_at is None and self.expires_at > now

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes


class QuotaCharge(models.Model):
    """One evaluation charged to a submitter; refunded (not deleted) when the platform failed it."""

    submitter = models.ForeignKey(Submitter, on_delete=models.CASCADE, related_name="charges")
    # SET_NULL: deleting an unpublished submission must not hand its evaluations back to the quota.
    job = models.ForeignKey(
        "jobs.EvaluationJob", null=True, blank=True, on_delete=models.SET_NULL, related_name="charges"
    )
    run = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now)
    refunded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "leaderboard_quotacharge"  # the table this model had before the site was cut into apps
        constraints = [models.UniqueConstraint(fields=["job", "run"], name="one_charge_per_run")]
        indexes = [models.Index(fields=["submitter", "created_at"], name="charge_submitter_time")]


class ThrottleEvent(models.Model):
    """One counted request of a throttled kind (a sign-up, a refused API token) from one client address: the rows
    of a sliding window kept in the database, so every web process sees the same count (a per-process cache would
    give each gunicorn worker its own allowance). Login failures are counted by django-axes in its own tables."""

    scope = models.CharField(max_length=20)
    key = models.CharField(max_length=64, help_text="the client's address")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["scope", "key", "created_at"], name="throttle_window")]
