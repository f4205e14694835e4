"""The catalogue: the 87 problems and the hardware profiles jobs run on (tables keep their leaderboard_ names)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.urls import reverse

from evaluator.contract.schema import MAX_PAIRS


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
        db_table = "leaderboard_problem"  # the table this model had before the site was cut into apps
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
    nvlink = models.BooleanField(
        default=False, help_text="its GPUs must be linked by NVLink: a worker whose GPUs are not refuses to start"
    )
    shared_device = models.BooleanField(
        default=False,
        help_text="every rank on one GPU (pkb eval --shared-device): correctness only, never timed or "
        "ranked; a worker pinned to one GPU serves it",
    )
    trials = models.PositiveSmallIntegerField(default=5)
    timing_pairs = models.PositiveSmallIntegerField(
        default=1,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_PAIRS)],
        help_text="time each job in this many fresh process pairs (pkb eval --pairs; evaluator/timing/pairs.py)",
    )
    accepting = models.BooleanField(default=True, help_text="open for new submissions")
    description = models.TextField(blank=True)

    class Meta:
        db_table = "leaderboard_hardwareprofile"  # the table this model had before the site was cut into apps
        ordering = ["-ranked", "slug"]

    def __str__(self) -> str:
        return self.slug

    def clean(self):
        if self.shared_device and self.ranked:  # time-sliced ranks on one GPU time nothing real
            raise ValidationError({"ranked": "a shared-device profile is correctness only: never ranked"})

    @property
    def queue_name(self) -> str:
        return self.slug
