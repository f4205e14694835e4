"""pkb-arena's tables. Behaviour that concerns one model lives here; writes across models live in services.py."""
from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from evaluator.schema import CORRECT, INFRA_ERROR, MAX_PAIRS, VERDICTS
from leaderboard.uploads import AGENTIC, BEST_OF_K, ONE_SHOT, PROTOCOLS  # noqa: F401 (the one protocol list)

VERDICT_CHOICES = [(v, v.replace("_", " ")) for v in VERDICTS]


class Problem(models.Model):
    """One of the 87 workloads: catalogue facts for all, plus the reference when the registry implements it."""

    id = models.PositiveSmallIntegerField(primary_key=True)
    stem = models.CharField(max_length=100, unique=True)
    title = models.TextField()
    category = models.TextField(blank=True)
    parallelism = models.TextField(blank=True)
    origin = models.TextField(blank=True)
    world_size_rule = models.TextField(blank=True)
    signature = models.TextField(blank=True)
    timed_arg = models.CharField(max_length=200, blank=True)
    output = models.TextField(blank=True)
    collectives = models.JSONField(default=list, blank=True)
    bytes_per_rank = models.BigIntegerField(default=0)
    flops_per_rank = models.BigIntegerField(default=0)
    implemented = models.BooleanField(default=False)
    atol = models.FloatField(null=True, blank=True)
    rtol = models.FloatField(null=True, blank=True)
    docstring = models.TextField(blank=True)
    reference_source = models.TextField(blank=True)
    reference_html = models.TextField(blank=True)  # highlighted once by load_problems
    light = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.stem

    def get_absolute_url(self) -> str:
        return reverse("problem", args=[self.stem])


class HardwareProfile(models.Model):
    """Where jobs run: one dramatiq queue per profile, named by its slug (``gpu-h200x8``, ``cpu-gloo``)."""

    DEVICES = [("cpu", "CPU (gloo)"), ("cuda", "CUDA (nccl)")]
    slug = models.SlugField(max_length=50, unique=True, help_text="also the dramatiq queue name")
    name = models.CharField(max_length=100)
    gpu_type = models.CharField(max_length=100, blank=True)
    device = models.CharField(max_length=8, choices=DEVICES, default="cuda")
    world_size = models.PositiveSmallIntegerField(default=8)
    ranked = models.BooleanField(default=True, help_text="timings from this profile may rank")
    multicast_allowed = models.BooleanField(default=False)
    trials = models.PositiveSmallIntegerField(default=5)
    timing_pairs = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(MAX_PAIRS)],
        help_text="time each job in this many fresh process pairs (pkb eval --pairs; evaluator/pairs.py)")
    accepting = models.BooleanField(default=True, help_text="open for new submissions")
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["-ranked", "slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def queue_name(self) -> str:
        return self.slug


class Submitter(models.Model):
    """A user who uploads; quota overrides (null = the site's defaults)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submitter")
    display_name = models.CharField(max_length=100, blank=True)
    quota_daily = models.PositiveIntegerField(null=True, blank=True)
    quota_total = models.PositiveIntegerField(null=True, blank=True)
    quota_concurrent = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

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


class Submission(models.Model):
    PROTOCOLS = [
        (ONE_SHOT, "one-shot"),
        (BEST_OF_K, "best-of-k"),
        (AGENTIC, "agentic with feedback"),
    ]
    SELECTIONS = [
        ("first", "first attempt"),
        ("last", "last attempt"),
        ("best_measured", "best of the k, measured by the platform"),
        ("self_selected", "the submitter's pick (attempt folders already filtered)"),
    ]
    VISIBILITY = [("private", "private"), ("public", "public"), ("hidden", "hidden by staff"),
                  ("withdrawn", "withdrawn by its owner")]

    submitter = models.ForeignKey(Submitter, on_delete=models.PROTECT, related_name="submissions")
    profile = models.ForeignKey(HardwareProfile, on_delete=models.PROTECT, related_name="submissions")
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
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="feedback_submissions",
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
    withdrawn_at = models.DateTimeField(null=True, blank=True, help_text="withdrawn by its owner: off every "
                                        "leaderboard and export, its results kept for the owner")

    class Meta:
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
    problem = models.ForeignKey(Problem, on_delete=models.PROTECT, related_name="candidates")
    attempt = models.PositiveSmallIntegerField(default=1)
    filename = models.CharField(max_length=300)
    backend = models.CharField(max_length=40)
    code = models.TextField()
    sha256 = models.CharField(max_length=64)
    size = models.PositiveIntegerField()

    class Meta:
        ordering = ["problem_id", "attempt"]
        constraints = [
            models.UniqueConstraint(fields=["submission", "problem", "attempt"], name="one_candidate_per_attempt"),
        ]

    def __str__(self) -> str:
        return f"{self.filename} (attempt {self.attempt})"


class EvaluationJob(models.Model):
    """The unit of work and its truth: a broker message only wakes a worker; the worker claims this row by CAS."""

    QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
    STATUSES = [(QUEUED, "queued"), (RUNNING, "running"), (DONE, "done"), (FAILED, "failed")]

    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="jobs")
    profile = models.ForeignKey(HardwareProfile, on_delete=models.PROTECT, related_name="jobs")
    # Denormalised for the status page and the quota's concurrency count.
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="jobs")
    submitter = models.ForeignKey(Submitter, on_delete=models.CASCADE, related_name="jobs")
    status = models.CharField(max_length=8, choices=STATUSES, default=QUEUED)
    run = models.PositiveIntegerField(default=1, help_text="1, then +1 per re-run; one final result per run")
    attempts = models.PositiveSmallIntegerField(default=0, help_text="claims in this run (infra retries)")
    max_attempts = models.PositiveSmallIntegerField(default=3)
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["candidate", "profile"], name="one_job_per_candidate_profile"),
        ]
        indexes = [
            models.Index(fields=["status", "lease_expires_at"], name="job_status_lease"),
            models.Index(fields=["submitter", "status"], name="job_submitter_status"),
        ]

    def __str__(self) -> str:
        return f"job {self.pk} ({self.status})"

    @property
    def active(self) -> bool:
        return self.status in (self.QUEUED, self.RUNNING)


class QuotaCharge(models.Model):
    """One evaluation charged to a submitter; refunded (not deleted) when the platform failed it."""

    submitter = models.ForeignKey(Submitter, on_delete=models.CASCADE, related_name="charges")
    # SET_NULL: deleting an unpublished submission must not hand its evaluations back to the quota.
    job = models.ForeignKey(EvaluationJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="charges")
    run = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now)
    refunded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "run"], name="one_charge_per_run")]
        indexes = [models.Index(fields=["submitter", "created_at"], name="charge_submitter_time")]


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
    timing_ranked = models.BooleanField(default=False)
    reference_ms = models.FloatField(null=True, blank=True)
    candidate_ms = models.FloatField(null=True, blank=True)
    wall_s = models.FloatField(null=True, blank=True)
    gpu_seconds = models.FloatField(default=0.0)
    document = models.JSONField(default=dict)
    worker = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = ResultQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["job", "run"], condition=~Q(verdict=INFRA_ERROR), name="one_final_result_per_run"
            ),
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


class ProblemScore(models.Model):
    """Materialised: a submission's selected outcome on one problem (after its selection rule over the k attempts)."""

    PENDING, NOT_JUDGED, NO_CANDIDATE = "pending", "not_judged", "missing"
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="scores")
    problem = models.ForeignKey(Problem, on_delete=models.CASCADE, related_name="scores")
    # Denormalised from the submission so problem pages filter one table.
    profile = models.ForeignKey(HardwareProfile, on_delete=models.CASCADE, related_name="+")
    protocol = models.CharField(max_length=20)
    listed = models.BooleanField(default=False, help_text="public and not hidden")
    status = models.CharField(max_length=20, default=PENDING, help_text="a verdict, pending, not_judged or missing")
    attempt = models.PositiveSmallIntegerField(null=True, blank=True)
    result = models.ForeignKey(Result, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    correct = models.BooleanField(default=False, help_text="correct and not flagged")
    faster = models.BooleanField(default=False)
    flagged = models.BooleanField(default=False)
    speedup = models.FloatField(null=True, blank=True)
    speedup_lo = models.FloatField(null=True, blank=True)
    speedup_hi = models.FloatField(null=True, blank=True)
    attempts_correct = models.PositiveSmallIntegerField(default=0)
    attempts_total = models.PositiveSmallIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["submission", "problem"], name="one_score_per_problem")]
        indexes = [models.Index(fields=["problem", "profile", "listed"], name="score_problem_profile")]


class ProblemStat(models.Model):
    """Materialised: solve rates of one problem over the listed submissions of one profile and protocol."""

    problem = models.ForeignKey(Problem, on_delete=models.CASCADE, related_name="stats")
    profile = models.ForeignKey(HardwareProfile, on_delete=models.CASCADE, related_name="+")
    protocol = models.CharField(max_length=20)
    tried = models.PositiveIntegerField(default=0)
    solved = models.PositiveIntegerField(default=0)
    faster = models.PositiveIntegerField(default=0)
    best_speedup = models.FloatField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["problem", "profile", "protocol"], name="one_stat_per_cell")]


class LeaderboardEntry(models.Model):
    """Materialised row of the leaderboard: one per submission, refreshed when one of its jobs finishes."""

    submission = models.OneToOneField(Submission, on_delete=models.CASCADE, related_name="entry")
    profile = models.ForeignKey(HardwareProfile, on_delete=models.CASCADE, related_name="entries")
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
        indexes = [models.Index(fields=["profile", "listed", "protocol"], name="entry_profile_listed")]

    @property
    def finished(self) -> bool:
        return self.pending == 0
