"""Leased work and its results: an evaluation job per judged candidate and the judge's append-only documents."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from evaluator.contract.schema import INFRA_ERROR, VERDICTS

VERDICT_CHOICES = [(v, v.replace("_", " ")) for v in VERDICTS]


class LeasedWork(models.Model):
    """A row a worker leases: the row is the truth, a broker message only wakes a worker, which claims the row by
    compare-and-swap and renews its lease while it works. Evaluation jobs and feedback runs are both leased work and
    share one lifecycle (leaderboard/jobs/lease.py)."""

    QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
    STATUSES = [(QUEUED, "queued"), (RUNNING, "running"), (DONE, "done"), (FAILED, "failed")]

    status = models.CharField(max_length=8, choices=STATUSES, default=QUEUED)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="claims (platform failures are retried)")
    max_attempts = models.PositiveSmallIntegerField(default=3)
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        abstract = True

    @property
    def active(self) -> bool:
        return self.status in (self.QUEUED, self.RUNNING)

    @property
    def finished(self) -> bool:
        return self.status in (self.DONE, self.FAILED)


class EvaluationJob(LeasedWork):
    """One judged candidate on one profile; ``run`` counts re-runs, ``attempts`` the claims within a run."""

    candidate = models.ForeignKey("submissions.Candidate", on_delete=models.CASCADE, related_name="jobs")
    profile = models.ForeignKey("catalogue.HardwareProfile", on_delete=models.PROTECT, related_name="jobs")
    # Denormalised for the status page and the quota's concurrency count.
    submission = models.ForeignKey("submissions.Submission", on_delete=models.CASCADE, related_name="jobs")
    submitter = models.ForeignKey("accounts.Submitter", on_delete=models.CASCADE, related_name="jobs")
    run = models.PositiveIntegerField(default=1, help_text="1, then +1 per re-run; one final result per run")
    created_at = models.DateTimeField(default=timezone.now)

    # The build stage (leaderboard/jobs/build_stage.py; docs/site.md, "GPU hosts: the build stage"): the file's
    # extensions built on CPU cores before its judged run. Only compile_error ends the job there; every other state
    # sends it on to its profile's queue, whose job builds whatever the stage did not.
    BUILD_QUEUED, BUILDING, BUILT = "queued", "building", "built"
    BUILD_COMPILE_ERROR, NOTHING_BUILT, UNREACHED = "compile_error", "nothing_built", "unreached"
    BUILD_SKIPPED, BUILD_INFRA_ERROR = "skipped", "infra_error"
    BUILD_STATUSES = [
        ("", "no build stage"),
        (BUILD_QUEUED, "waiting for its build"),
        (BUILDING, "building"),
        (BUILT, "built before its run"),
        (BUILD_COMPILE_ERROR, "compile error, found by the build stage"),
        (NOTHING_BUILT, "nothing to build"),
        (UNREACHED, "built in its run: the stage could not reach the build"),
        (BUILD_SKIPPED, "no compile call in the file"),
        (BUILD_INFRA_ERROR, "built in its run: the build stage failed"),
    ]
    build_status = models.CharField(max_length=16, choices=BUILD_STATUSES, blank=True, default="")
    build_report = models.JSONField(default=dict, blank=True, help_text="the build stage's report (pkb prebuild)")

    class Meta:
        db_table = "leaderboard_evaluationjob"  # the table this model had before the site was cut into apps
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["candidate", "profile"], name="one_job_per_candidate_profile")]
        indexes = [
            models.Index(fields=["status", "lease_expires_at"], name="job_status_lease"),
            models.Index(fields=["submitter", "status"], name="job_submitter_status"),
        ]

    def __str__(self) -> str:
        return f"job {self.pk} ({self.status})"


class ResultQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise TypeError("results are append-only")


class Result(models.Model):
    """The judge's JSON for one run of one job, append-only. At most one final (non-infra) result per (job, run)."""

    job = models.ForeignKey(EvaluationJob, on_delete=models.CASCADE, related_name="results")
    run = models.PositiveIntegerField()
    claim = models.PositiveSmallIntegerField(default=1)
    verdict = models.CharField(max_length=20, choices=VERDICT_CHOICES)
    message = models.TextField(blank=True)
    flags = models.JSONField(default=list, blank=True)
    speedup = models.FloatField(null=True, blank=True)
    speedup_lo = models.FloatField(null=True, blank=True)
    speedup_hi = models.FloatField(null=True, blank=True)
    faster = models.BooleanField(default=False)
    reference_ms = models.FloatField(null=True, blank=True)
    candidate_ms = models.FloatField(null=True, blank=True)
    wall_s = models.FloatField(null=True, blank=True)
    gpu_seconds = models.FloatField(default=0.0)
    document = models.JSONField(default=dict)
    worker = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = ResultQuerySet.as_manager()

    class Meta:
        db_table = "leaderboard_result"  # the table this model had before the site was cut into apps
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["job", "run"], condition=~Q(verdict=INFRA_ERROR), name="one_final_result_per_run"
            )
        ]

    def __str__(self) -> str:
        return f"result {self.pk}: {self.verdict}"

    def save(self, *args, **kwargs):
        if self.pk is not None and not self._state.adding:
            raise TypeError("results are append-only")
        super().save(*args, **kwargs)

    @property
    def is_final(self) -> bool:
        return self.verdict != INFRA_ERROR

    @property
    def environment(self) -> dict:
        return self.document.get("environment") or {}

    @property
    def logs(self) -> list:
        return self.document.get("logs") or []
