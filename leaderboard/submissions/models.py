"""A submission (one upload: a model or agent, a protocol, k attempts) and its candidate files."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from leaderboard.submissions.uploads.metadata import AGENTIC, BEST_OF_K, ONE_SHOT


class Submission(models.Model):
    PROTOCOLS = [(ONE_SHOT, "one-shot"), (BEST_OF_K, "best-of-k"), (AGENTIC, "agentic with feedback")]
    SELECTIONS = [
        ("first", "first attempt"),
        ("last", "last attempt"),
        ("best_measured", "best of the k, measured by the platform"),
        ("self_selected", "the submitter's pick (attempt folders already filtered)"),
    ]
    VISIBILITY = [
        ("private", "private"),
        ("public", "public"),
        ("hidden", "hidden by staff"),
        ("withdrawn", "withdrawn by its owner"),
    ]

    submitter = models.ForeignKey("accounts.Submitter", on_delete=models.PROTECT, related_name="submissions")
    profile = models.ForeignKey("catalogue.HardwareProfile", on_delete=models.PROTECT, related_name="submissions")
    label = models.CharField(max_length=200, blank=True)
    model_name = models.CharField(max_length=200)
    agent = models.CharField(max_length=200, blank=True)
    agent_version = models.CharField(max_length=100, blank=True)
    backend = models.CharField(max_length=40)
    protocol = models.CharField(max_length=20, choices=PROTOCOLS)
    attempts_k = models.PositiveSmallIntegerField(default=1)
    selection_rule = models.CharField(max_length=20, choices=SELECTIONS, default="first")
    reported_tokens = models.BigIntegerField(null=True, blank=True)
    reported_dollars = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True)
    feedback_runs = models.PositiveIntegerField(default=0, help_text="platform-measured evaluations used as feedback")
    gpu_seconds = models.FloatField(default=0.0, help_text="platform-measured, summed over this submission's results")
    feedback_for = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="feedback_submissions",
        help_text="a private run an agent used as feedback for another submission",
    )
    visibility = models.CharField(max_length=10, choices=VISIBILITY, default="private")
    verified = models.BooleanField(default=False)
    flagged = models.BooleanField(default=False)
    flag_reason = models.CharField(max_length=300, blank=True)
    notes = models.TextField(blank=True)
    archive_sha256 = models.CharField(max_length=64, blank=True)
    # sha256 over the sorted (problem, attempt, file sha256) of its candidates: an identical re-upload is refused.
    files_sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    published_at = models.DateTimeField(null=True, blank=True)
    withdrawn_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="withdrawn by its owner: off every leaderboard and export, its results kept for the owner",
    )

    class Meta:
        db_table = "leaderboard_submission"  # the table this model had before the site was cut into apps
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"#{self.pk} {self.model_name}"

    def get_absolute_url(self) -> str:
        return reverse("submission", args=[self.pk])

    @property
    def is_public(self) -> bool:
        return self.visibility == "public"

    def visible_to(self, user) -> bool:
        if self.visibility == "public":
            return True
        return bool(user and user.is_authenticated and (user.is_staff or self.is_owner(user)))

    def is_owner(self, user) -> bool:
        return bool(user and user.is_authenticated and self.submitter.user_id == user.pk)

    def code_visible_to(self, user) -> bool:
        """Code and logs: the owner (and staff) until published; everyone after."""
        if self.visibility == "public":
            return True
        return bool(user and user.is_authenticated and (user.is_staff or self.is_owner(user)))


class Candidate(models.Model):
    """One file: a (problem, attempt) of a submission."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="candidates")
    problem = models.ForeignKey("catalogue.Problem", on_delete=models.PROTECT, related_name="candidates")
    attempt = models.PositiveSmallIntegerField(default=1)
    filename = models.CharField(max_length=300)
    backend = models.CharField(max_length=40)
    code = models.TextField()
    sha256 = models.CharField(max_length=64)
    size = models.PositiveIntegerField()

    class Meta:
        db_table = "leaderboard_candidate"  # the table this model had before the site was cut into apps
        ordering = ["problem_id", "attempt"]
        constraints = [
            models.UniqueConstraint(fields=["submission", "problem", "attempt"], name="one_candidate_per_attempt")
        ]

    def __str__(self) -> str:
        return f"{self.filename} (attempt {self.attempt})"


class Transcript(models.Model):
    """An agent transcript uploaded with a submission (uploads/transcripts.py): JSONL of messages, tool calls and
    results, kept as uploaded (bounded, checked line by line) and shown step by step by the transcript page. Like
    code: the owner's (and staff's) until the submission is published."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="transcripts")
    problem = models.ForeignKey(
        "catalogue.Problem",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="empty: the transcript covers the whole submission",
    )
    attempt = models.PositiveSmallIntegerField(null=True, blank=True)
    filename = models.CharField(max_length=300)
    content = models.TextField()
    steps = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    size = models.PositiveIntegerField()

    class Meta:
        ordering = ["problem_id", "attempt", "filename"]
        constraints = [models.UniqueConstraint(fields=["submission", "filename"], name="one_transcript_per_path")]

    def __str__(self) -> str:
        return self.filename

    def get_absolute_url(self) -> str:
        return reverse("transcript", args=[self.pk])


class MetadataChange(models.Model):
    """One correction of a submission's self-reported metadata by its owner (or staff): which fields, from what to
    what, by whom and when. Shown on the submission's page, so a corrected label or cost is never silent. What was
    judged (protocol, k, profile, files) is never corrected: that is a new submission (submissions/metadata.py)."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="metadata_changes")
    changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    changed_at = models.DateTimeField(default=timezone.now)
    changes = models.JSONField(help_text='{"field": [old, new], ...}, values as strings')

    class Meta:
        ordering = ["changed_at", "pk"]

    def __str__(self) -> str:
        return f"#{self.submission_id} {', '.join(self.changes)} at {self.changed_at:%Y-%m-%d %H:%M}"
