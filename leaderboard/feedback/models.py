"""Feedback sessions, feedback and profile runs, and per-user feedback quotas.

A feedback run is one candidate judged for one problem on one hardware profile with public seeds only. It is never a
leaderboard job: no EvaluationJob, Result or score row is ever made from it. Metering is in integer milliseconds so
that sums are exact: ``wall_ms`` is the judge's own wall time (``wall_s`` of its document) and ``gpu_ms`` is
W x ``wall_ms`` on GPU profiles and 0 on CPU profiles.
"""

from __future__ import annotations

from django.db import models
from django.urls import reverse
from django.utils import timezone

from leaderboard.jobs.models import LeasedWork


class FeedbackSession(models.Model):
    """An agent's search: every feedback run it asks for is recorded against it. Linking it to an agentic
    submission closes it and shows its measured cost beside the submission's self-reported cost."""

    submitter = models.ForeignKey("accounts.Submitter", on_delete=models.CASCADE, related_name="feedback_sessions")
    profile = models.ForeignKey("catalogue.HardwareProfile", on_delete=models.PROTECT, related_name="+")
    label = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    closed_at = models.DateTimeField(null=True, blank=True)
    submission = models.ForeignKey(
        "submissions.Submission", null=True, blank=True, on_delete=models.SET_NULL, related_name="feedback_sessions"
    )
    linked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"session {self.pk} ({self.profile_id})"

    def get_absolute_url(self) -> str:
        return reverse("feedback-session", args=[self.pk])

    @property
    def is_open(self) -> bool:
        return self.closed_at is None

    def visible_to(self, user) -> bool:
        if user and user.is_authenticated and (user.is_staff or self.submitter.user_id == user.pk):
            return True
        return self.submission is not None and self.submission.visibility == "public"


class FeedbackRun(LeasedWork):
    FEEDBACK, PROFILE = "feedback", "profile"
    KINDS = [(FEEDBACK, "feedback"), (PROFILE, "profile")]

    kind = models.CharField(max_length=10, choices=KINDS, default=FEEDBACK)
    session = models.ForeignKey(FeedbackSession, null=True, blank=True, on_delete=models.CASCADE, related_name="runs")
    candidate = models.ForeignKey(
        "submissions.Candidate",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="profile_runs",
        help_text="profile runs: the file profiled",
    )
    submitter = models.ForeignKey("accounts.Submitter", on_delete=models.CASCADE, related_name="feedback_runs")
    profile = models.ForeignKey("catalogue.HardwareProfile", on_delete=models.PROTECT, related_name="+")
    problem = models.ForeignKey("catalogue.Problem", on_delete=models.PROTECT, related_name="+")
    filename = models.CharField(max_length=300)
    code = models.TextField()
    sha256 = models.CharField(max_length=64)
    M = models.PositiveIntegerField(default=1024)
    N = models.PositiveIntegerField(default=1024)
    world_size = models.PositiveSmallIntegerField()
    device = models.CharField(max_length=8)
    trials = models.PositiveSmallIntegerField()
    seeds = models.JSONField(default=list, help_text="the public seeds given to the judge")

    verdict = models.CharField(max_length=20, blank=True)
    document = models.JSONField(default=dict, blank=True, help_text="the judge's document (owner only)")
    feedback = models.JSONField(default=dict, blank=True, help_text="the structured feedback returned to the agent")
    wall_ms = models.BigIntegerField(default=0, help_text="platform-measured: the judge's wall time")
    gpu_ms = models.BigIntegerField(default=0, help_text="platform-measured: W x wall on GPU profiles, 0 on CPU")
    infra_failures = models.PositiveSmallIntegerField(default=0)
    trace_gz = models.BinaryField(null=True, blank=True, help_text="profile runs: the merged trace, gzip")
    summary = models.JSONField(null=True, blank=True, help_text="profile runs: the per-kernel summary")

    created_at = models.DateTimeField(default=timezone.now)
    refunded_at = models.DateTimeField(null=True, blank=True, help_text="the platform failed it: not charged")

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["submitter", "status"], name="fbrun_submitter_status"),
            models.Index(fields=["submitter", "created_at"], name="fbrun_submitter_time"),
            models.Index(fields=["status", "lease_expires_at"], name="fbrun_status_lease"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} run {self.pk} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("feedback-run", args=[self.pk])

    @property
    def queue_name(self) -> str:
        return queue_for(self.profile.slug)

    def visible_to(self, user) -> bool:
        return bool(user and user.is_authenticated and (user.is_staff or self.submitter.user_id == user.pk))


class FeedbackQuota(models.Model):
    """Per-user overrides of the feedback quota (null: the site's default)."""

    submitter = models.OneToOneField("accounts.Submitter", on_delete=models.CASCADE, related_name="feedback_quota")
    daily = models.PositiveIntegerField(null=True, blank=True)
    concurrent = models.PositiveIntegerField(null=True, blank=True)

    def __str__(self) -> str:
        return f"feedback quota of {self.submitter}"


def queue_for(profile_slug: str) -> str:
    """Feedback runs have their own queue per profile: a GPU host's feedback worker never delays ranking jobs."""
    return f"feedback-{profile_slug}"
