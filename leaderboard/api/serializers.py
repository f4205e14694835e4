"""The API's serializers of the models and of the queries: profiles, problems, submissions, leaderboard entries (and
their fast path for hundreds of rows, entry_row), scores, audits, an upload's fields, the queries' parameters. What the
views answer when they build plain dicts is response_shapes.py's.
"""

from __future__ import annotations

import re

from django.conf import settings
from rest_framework import serializers

from leaderboard.catalogue.models import HardwareProfile, Problem
from leaderboard.scoring import costs
from leaderboard.scoring.models import LeaderboardEntry, ProblemScore
from leaderboard.submissions.models import Submission
from leaderboard.validators import MAX_ID, check_paths, no_control_characters


class AsciiIntegerField(serializers.IntegerField):
    """DRF's IntegerField hands the text to int(), which also takes other scripts' digits ('\u0663'); this one takes
    ASCII digits only (JSON integers as they are)."""

    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("invalid")
        if isinstance(data, str) and not re.fullmatch(r"[+-]?[0-9]{1,19}", data.strip()):
            self.fail("invalid")
        return super().to_internal_value(data)


def Text(max_length: int, **kwargs) -> serializers.CharField:
    """One line of text: bounded, no control characters (DRF's CharField already refuses NUL)."""
    return serializers.CharField(max_length=max_length, validators=[no_control_characters], **kwargs)


class RerunQuery(serializers.Serializer):
    only = serializers.ChoiceField(choices=["failed"], required=False, help_text="re-run platform failures only")


class LeaderboardQuery(serializers.Serializer):
    """The API leaderboard's window; protocol, backend, k and sort go through selectors.Filters like the page's."""

    offset = AsciiIntegerField(required=False, min_value=0, max_value=1_000_000, default=0)
    limit = AsciiIntegerField(required=False, min_value=1, max_value=500, default=50)


class ProfileSerializer(serializers.ModelSerializer):
    class Meta:
        model = HardwareProfile
        fields = [
            "slug",
            "name",
            "gpu_type",
            "device",
            "world_size",
            "ranked",
            "multicast_allowed",
            "trials",
            "timing_pairs",
            "accepting",
            "description",
            "shared_device",
        ]


class ProblemSerializer(serializers.ModelSerializer):
    tried = serializers.IntegerField(read_only=True)
    solved = serializers.IntegerField(read_only=True)
    faster_count = serializers.IntegerField(read_only=True)
    solve_rate = serializers.FloatField(read_only=True, allow_null=True)
    best = serializers.FloatField(read_only=True, allow_null=True)
    best_peak = serializers.FloatField(read_only=True, allow_null=True, help_text="best peak fraction")

    class Meta:
        model = Problem
        fields = [
            "id",
            "stem",
            "title",
            "category",
            "parallelism",
            "world_size_rule",
            "signature",
            "timed_arg",
            "implemented",
            "bytes_per_rank",
            "flops_per_rank",
            "tried",
            "solved",
            "faster_count",
            "solve_rate",
            "best",
            "best_peak",
        ]


class ProblemDetailSerializer(serializers.ModelSerializer):
    class Meta:
        model = Problem
        fields = [
            "id",
            "stem",
            "title",
            "category",
            "parallelism",
            "origin",
            "world_size_rule",
            "signature",
            "timed_arg",
            "output",
            "collectives",
            "implemented",
            "atol",
            "rtol",
            "docstring",
            "reference_source",
            "light",
            "bytes_per_rank",
            "flops_per_rank",
        ]


class SubmissionSerializer(serializers.ModelSerializer):
    profile = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    submitter = serializers.CharField(source="submitter.name", read_only=True)
    url = serializers.CharField(source="get_absolute_url", read_only=True)
    # Costs as leaderboard/scoring/costs.py defines them: rank-seconds always, GPU-seconds only on GPU profiles (null
    # on CPU).
    cost_unit = serializers.SerializerMethodField(help_text="GPU-seconds on GPU profiles, rank-seconds on CPU ones")
    rank_seconds = serializers.SerializerMethodField(help_text="measured: W x judge wall time over its results")
    gpu_seconds = serializers.SerializerMethodField(help_text="rank_seconds on GPU profiles; null on CPU profiles")
    feedback_runs = serializers.SerializerMethodField(help_text="measured evaluations used as feedback")

    def get_cost_unit(self, obj) -> str:
        return costs.api_fields(obj)["cost_unit"]

    def get_rank_seconds(self, obj) -> float:
        return costs.api_fields(obj)["rank_seconds"]

    def get_gpu_seconds(self, obj) -> float | None:
        return costs.api_fields(obj)["gpu_seconds"]

    def get_feedback_runs(self, obj) -> int:
        return costs.api_fields(obj)["feedback_runs"]

    class Meta:
        model = Submission
        fields = [
            "id",
            "url",
            "submitter",
            "profile",
            "label",
            "model_name",
            "agent",
            "agent_version",
            "backend",
            "protocol",
            "attempts_k",
            "selection_rule",
            "reported_tokens",
            "reported_dollars",
            "feedback_runs",
            "cost_unit",
            "rank_seconds",
            "gpu_seconds",
            "visibility",
            "verified",
            "flagged",
            "flag_reason",
            "created_at",
            "published_at",
        ]


class EntrySerializer(serializers.ModelSerializer):
    submission = SubmissionSerializer(read_only=True)
    rank = serializers.IntegerField(read_only=True, allow_null=True)

    class Meta:
        model = LeaderboardEntry
        fields = [
            "rank",
            "submission",
            "protocol",
            "backend",
            "attempts_k",
            "ranked",
            "correct",
            "faster",
            "fast_1_0",
            "fast_1_5",
            "fast_2_0",
            "geomean_speedup",
            "geomean_peak_fraction",
            "peak_problems",
            "audit",
            "audited_results",
            "judged",
            "pending",
            "flagged_results",
        ]


def entry_row(row: dict, submission_url) -> dict:
    """EntrySerializer's output built from a leaderboard row (scoring/selectors.py, leaderboard_slice): DRF serializers,
    and model instances, are too slow for hundreds of rows per request. ``submission_url(pk)``: a submission's page."""

    def sub(field):
        return row["submission__" + field]

    cost = costs.Cost(
        device=sub("profile__device"), rank_seconds=sub("gpu_seconds") or 0.0, feedback_runs=sub("feedback_runs")
    )
    return {
        "rank": row["rank"],
        "protocol": row["protocol"],
        "backend": row["backend"],
        "attempts_k": row["attempts_k"],
        "ranked": row["ranked"],
        "correct": row["correct"],
        "faster": row["faster"],
        "fast_1_0": row["fast_1_0"],
        "fast_1_5": row["fast_1_5"],
        "fast_2_0": row["fast_2_0"],
        "geomean_speedup": row["geomean_speedup"],
        "geomean_peak_fraction": row["geomean_peak_fraction"],
        "peak_problems": row["peak_problems"],
        "audit": row["audit"],
        "audited_results": row["audited_results"],
        "judged": row["judged"],
        "pending": row["pending"],
        "flagged_results": row["flagged_results"],
        "submission": {
            "id": row["submission_id"],
            "url": submission_url(row["submission_id"]),
            "submitter": sub("submitter__display_name") or sub("submitter__user__username"),
            "profile": sub("profile__slug"),
            "label": sub("label"),
            "model_name": sub("model_name"),
            "agent": sub("agent"),
            "agent_version": sub("agent_version"),
            "backend": sub("backend"),
            "protocol": sub("protocol"),
            "attempts_k": sub("attempts_k"),
            "selection_rule": sub("selection_rule"),
            "reported_tokens": sub("reported_tokens"),
            "reported_dollars": None if sub("reported_dollars") is None else str(sub("reported_dollars")),
            **costs.cost_fields(cost),
            "visibility": sub("visibility"),
            "verified": sub("verified"),
            "flagged": sub("flagged"),
            "flag_reason": sub("flag_reason"),
            "created_at": sub("created_at"),
            "published_at": sub("published_at"),
        },
    }


class ScoreSerializer(serializers.ModelSerializer):
    submission = serializers.IntegerField(source="submission_id")
    problem = serializers.IntegerField(source="problem_id")

    class Meta:
        model = ProblemScore
        fields = [
            "submission",
            "problem",
            "protocol",
            "status",
            "attempt",
            "correct",
            "faster",
            "flagged",
            "speedup",
            "speedup_lo",
            "speedup_hi",
            "peak_fraction",
            "peak_fraction_lo",
            "peak_fraction_hi",
            "peak_note",
            "audit",
            "attempts_correct",
            "attempts_total",
        ]


class UploadSerializer(serializers.Serializer):
    """Multipart fields of POST /api/v1/submissions/ (metadata may also come from submission.json)."""

    archive = serializers.FileField(required=False, help_text=".zip, .tar, .tar.gz or .tgz in PKB layout")
    files = serializers.ListField(
        child=serializers.FileField(),
        required=False,
        help_text="the files of a directory; give their relative paths in 'paths'",
    )
    paths = serializers.CharField(
        required=False,
        max_length=1_000_000,
        validators=[check_paths],
        help_text="JSON list of relative paths, one per file",
    )
    model = Text(200, required=False, allow_blank=True)
    # Aliases (one-shot, agentic...) are resolved by uploads.clean_metadata, which also checks the value.
    protocol = Text(40, required=False, allow_blank=True, help_text="one_shot, best_of_k or agentic_feedback")
    # The server's own limit (settings.PKB_MAX_ATTEMPTS, which uploads.clean_metadata enforces), so the schema says it.
    attempts = AsciiIntegerField(required=False, min_value=1, max_value=settings.PKB_MAX_ATTEMPTS)
    profile = serializers.SlugField(required=False, max_length=50, allow_blank=True)
    agent = Text(200, required=False, allow_blank=True)
    agent_version = Text(100, required=False, allow_blank=True)
    backend = Text(40, required=False, allow_blank=True)
    selection = Text(40, required=False, allow_blank=True, help_text="first, last, best_measured or self_selected")
    tokens = AsciiIntegerField(required=False, min_value=0, max_value=2**53)
    dollars = serializers.DecimalField(required=False, max_digits=12, decimal_places=2, min_value=0)
    label = Text(200, required=False, allow_blank=True)
    notes = serializers.CharField(required=False, allow_blank=True, max_length=5000)
    feedback_for = AsciiIntegerField(required=False, min_value=1, max_value=MAX_ID)
    publish = serializers.BooleanField(required=False, default=False)


class AuditSerializer(serializers.Serializer):
    submission = serializers.IntegerField(source="submission_id")
    problem = serializers.IntegerField(
        source="problem_id", allow_null=True, help_text="null: the audit reads the whole submission"
    )
    problem_stem = serializers.SerializerMethodField()
    result = serializers.IntegerField(source="result_id", allow_null=True)
    verdict = serializers.ChoiceField(choices=["clean", "reward_hack", "rubric_leak", "interesting"])
    note = serializers.CharField()
    auditor = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_problem_stem(self, obj) -> str | None:
        return obj.problem.stem if obj.problem_id else None

    def get_auditor(self, obj) -> str:
        return obj.auditor.get_username()


class AuditQuery(serializers.Serializer):
    submission = AsciiIntegerField(required=False, min_value=1, max_value=MAX_ID)
