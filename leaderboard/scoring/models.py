"""Materialised reads: per-problem scores, per-problem solve rates and one leaderboard row per submission."""

from __future__ import annotations

from django.conf import settings
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
    # "Faster at 1.5x / 2x" as the judge decided them (evaluator/contract/verdict.py faster_at, via schema): fast_1.5
    # and fast_2.0 count these, never a bound compared here, so they can never count a result "faster" withheld.
    faster_1_5 = models.BooleanField(default=False)
    faster_2_0 = models.BooleanField(default=False)
    flagged = models.BooleanField(default=False)
    speedup = models.FloatField(null=True, blank=True)
    speedup_lo = models.FloatField(null=True, blank=True)
    speedup_hi = models.FloatField(null=True, blank=True)
    attempts_correct = models.PositiveSmallIntegerField(default=0)
    attempts_total = models.PositiveSmallIntegerField(default=0)
    # Peak fraction (evaluator/timing/peak.py): the judge's speed-of-light floor over the candidate's median, with
    # its interval; null with ``peak_note`` saying why where no floor applies (no ceilings, no formula at this shape).
    peak_fraction = models.FloatField(null=True, blank=True)
    peak_fraction_lo = models.FloatField(null=True, blank=True)
    peak_fraction_hi = models.FloatField(null=True, blank=True)
    peak_note = models.CharField(max_length=300, blank=True)
    # The staff's audit of this cell, if any (Audit.verdict): a reward hack counts as a flag.
    audit = models.CharField(max_length=20, blank=True)

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
    best_peak_fraction = models.FloatField(null=True, blank=True)
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
    # Its own column, never mixed into Correct or Faster: over the correct, unflagged problems with a floor.
    geomean_peak_fraction = models.FloatField(null=True, blank=True)
    peak_problems = models.PositiveSmallIntegerField(default=0, help_text="problems in the peak-fraction geomean")
    audit = models.CharField(max_length=20, blank=True, help_text="the staff's audit of the whole submission")
    audited_results = models.PositiveSmallIntegerField(default=0)
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


class Audit(models.Model):
    """A staff member's reading of a result (one problem of a submission) or of a whole submission: clean, reward
    hack, rubric leak or interesting, with a note, who and when. Public once the submission is listed; a reward
    hack takes the result (or the submission) out of ranking, as a flag does."""

    CLEAN, REWARD_HACK, RUBRIC_LEAK, INTERESTING = "clean", "reward_hack", "rubric_leak", "interesting"
    VERDICTS = [
        (CLEAN, "clean"),
        (REWARD_HACK, "reward hack"),
        (RUBRIC_LEAK, "rubric leak"),
        (INTERESTING, "interesting"),
    ]
    submission = models.ForeignKey("submissions.Submission", on_delete=models.CASCADE, related_name="audits")
    problem = models.ForeignKey(
        "catalogue.Problem",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="empty: the audit reads the whole submission",
    )
    result = models.ForeignKey(
        "jobs.Result",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="the result read (the problem's selected one when recorded)",
    )
    verdict = models.CharField(max_length=20, choices=VERDICTS)
    note = models.TextField(max_length=4000)
    auditor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(fields=["submission", "problem"], name="one_audit_per_cell"),
            models.UniqueConstraint(
                fields=["submission"], condition=models.Q(problem__isnull=True), name="one_audit_per_submission"
            ),
        ]

    def __str__(self) -> str:
        where = f"problem {self.problem_id}" if self.problem_id else "whole submission"
        return f"#{self.submission_id} {where}: {self.verdict}"
