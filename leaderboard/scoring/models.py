"""Materialised reads: per-problem scores, per-problem solve rates and one leaderboard row per submission."""
from __future__ import annotations

from django.db import models
from django.utils import timezone


class ProblemScore(models.Model):
    """Materialised: a submission's selected outcome on one problem (after its selection rule over the k attempts)."""

    PENDING, NOT_JUDGED, NO_CANDIDATE = "pending", "not_judged", "missing"
    submission = models.ForeignKey("submissions.Submission", on_delete=models.CASCADE, related_name="scores")
    problem = models.ForeignKey("catalogue.Problem", on_delete=models.CASCADE, related_name="scores")
    # Denormalised from the submission so problem pages filter one table.
    profile = models.ForeignKey("catalogue.HardwareProfile", on_delete=models.CASCADE, related_name="+")
    protocol = models.CharField(max_length=20)
    listed = models.BooleanField(default=False, help_text="public and not hidden")
    status = models.CharField(max_length=20, default=PENDING, help_text="a verdict, pending, not_judged or missing")
    attempt = models.PositiveSmallIntegerField(null=True, blank=True)
    result = models.ForeignKey("jobs.Result", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    correct = models.BooleanField(default=False, help_text="correct and not flagged")
    faster = models.BooleanField(default=False)
    flagged = models.BooleanField(default=False)
    speedup = models.FloatField(null=True, blank=True)
    speedup_lo = models.FloatField(null=True, blank=True)
    speedup_hi = models.FloatField(null=True, blank=True)
    attempts_correct = models.PositiveSmallIntegerField(default=0)
    attempts_total = models.PositiveSmallIntegerField(default=0)

    class Meta:
        db_table = "leaderboard_problemscore"  # the table this model had before the site was cut into apps
        constraints = [models.UniqueConstraint(fields=["submission", "problem"], name="one_score_per_problem")]
        indexes = [models.Index(fields=["problem", "profile", "listed"], name="score_problem_profile")]


class ProblemStat(models.Model):
    """Materialised: solve rates of one problem over the listed submissions of one profile and protocol."""

    problem = models.ForeignKey("catalogue.Problem", on_delete=models.CASCADE, related_name="stats")
    profile = models.ForeignKey("catalogue.HardwareProfile", on_delete=models.CASCADE, related_name="+")
    protocol = models.CharField(max_length=20)
    tried = models.PositiveIntegerField(default=0)
    solved = models.PositiveIntegerField(default=0)
    faster = models.PositiveIntegerField(default=0)
    best_speedup = models.FloatField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "leaderboard_problemstat"  # the table this model had before the site was cut into apps
        constraints = [models.UniqueConstraint(fields=["problem", "profile", "protocol"], name="one_stat_per_cell")]


class LeaderboardEntry(models.Model):
    """Materialised row of the leaderboard: one per submission, refreshed when one of its jobs finishes."""

    submission = models.OneToOneField("submissions.Submission", on_delete=models.CASCADE, related_name="entry")
    profile = models.ForeignKey("catalogue.HardwareProfile", on_delete=models.CASCADE, related_name="entries")
    protocol = models.CharField(max_length=20)
    backend = models.CharField(max_length=40)
    attempts_k = models.PositiveSmallIntegerField()
    listed = models.BooleanField(default=False, help_text="public and not hidden")
    ranked = models.BooleanField(default=False, help_text="listed, profile ranked, not flagged")
    correct = models.PositiveSmallIntegerField(default=0)
    faster = models.PositiveSmallIntegerField(default=0)
    fast_1_0 = models.FloatField(default=0.0)
    fast_1_5 = models.FloatField(default=0.0)
    fast_2_0 = models.FloatField(default=0.0)
    geomean_speedup = models.FloatField(null=True, blank=True)
    judged = models.PositiveSmallIntegerField(default=0)
    pending = models.PositiveSmallIntegerField(default=0)
    flagged_results = models.PositiveSmallIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "leaderboard_leaderboardentry"  # the table this model had before the site was cut into apps
        indexes = [models.Index(fields=["profile", "listed", "protocol"], name="entry_profile_listed")]

    @property
    def finished(self) -> bool:
        return self.pending == 0
