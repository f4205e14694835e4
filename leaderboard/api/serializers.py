from __future__ import annotations

import re

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


def Text(max_length: int, **kwargs) -> serializers.CharField:  # noqa: N802 - reads like a field class
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
        fields = ["slug", "name", "gpu_type", "device", "world_size", "ranked", "multicast_allowed", "trials",
                  "timing_pairs", "accepting", "description"]


class ProblemSerializer(serializers.ModelSerializer):
    tried = serializers.IntegerField(read_only=True)
    solved = serializers.IntegerField(read_only=True)
    faster_count = serializers.IntegerField(read_only=True)
    solve_rate = serializers.FloatField(read_only=True, allow_null=True)
    best = serializers.FloatField(read_only=True, allow_null=True)

    class Meta:
        model = Problem
        fields = ["id", "stem", "title", "category", "parallelism", "world_size_rule", "signature", "timed_arg",
                  "implemented", "bytes_per_rank", "flops_per_rank", "tried", "solved", "faster_count",
                  "solve_rate", "best"]


class ProblemDetailSerializer(serializers.ModelSerializer):
    class Meta:
        model = Problem
        fields = ["id", "stem", "title", "category", "parallelism", "origin", "world_size_rule", "signature",
                  "timed_arg", "output", "collectives", "implemented", "atol", "rtol", "docstring",
                  "reference_source", "light", "bytes_per_rank", "flops_per_rank"]


class SubmissionSerializer(serializers.ModelSerializer):
    profile = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    submitter = serializers.CharField(source="submitter.name", read_only=True)
    url = serializers.CharField(source="get_absolute_url", read_only=True)
    # Costs as leaderboard/scoring/costs.py defines them: rank-seconds always, GPU-seconds only on GPU profiles (null on CPU).
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
        fields = ["id", "url", "submitter", "profile", "label", "model_name", "agent", "agent_version", "backend",
                  "protocol", "attempts_k", "selection_rule", "reported_tokens", "reported_dollars",
                  "feedback_runs", "cost_unit", "rank_seconds", "gpu_seconds", "visibility", "verified", "flagged",
                  "flag_reason", "created_at", "published_at"]


class EntrySerializer(serializers.ModelSerializer):
    submission = SubmissionSerializer(read_only=True)
    rank = serializers.IntegerField(read_only=True, allow_null=True)

    class Meta:
        model = LeaderboardEntry
        fields = ["rank", "submission", "protocol", "backend", "attempts_k", "ranked", "correct", "faster",
                  "fast_1_0", "fast_1_5", "fast_2_0", "geomean_speedup", "judged", "pending", "flagged_results"]


def entry_dict(e) -> dict:
    """EntrySerializer's output, built by hand: DRF serializers are too slow for hundreds of rows per request."""
    s = e.submission
    return {
        "rank": getattr(e, "rank", None), "protocol": e.protocol, "backend": e.backend, "attempts_k": e.attempts_k,
        "ranked": e.ranked, "correct": e.correct, "faster": e.faster, "fast_1_0": e.fast_1_0, "fast_1_5": e.fast_1_5,
        "fast_2_0": e.fast_2_0, "geomean_speedup": e.geomean_speedup, "judged": e.judged, "pending": e.pending,
        "flagged_results": e.flagged_results,
        "submission": {
            "id": s.pk, "url": s.get_absolute_url(), "submitter": s.submitter.name, "profile": s.profile.slug,
            "label": s.label, "model_name": s.model_name, "agent": s.agent, "agent_version": s.agent_version,
            "backend": s.backend, "protocol": s.protocol, "attempts_k": s.attempts_k,
            "selection_rule": s.selection_rule, "reported_tokens": s.reported_tokens,
            "reported_dollars": None if s.reported_dollars is None else str(s.reported_dollars),
            **costs.api_fields(s), "visibility": s.visibility,
            "verified": s.verified, "flagged": s.flagged, "flag_reason": s.flag_reason,
            "created_at": s.created_at, "published_at": s.published_at,
        },
    }


class ScoreSerializer(serializers.ModelSerializer):
    submission = serializers.IntegerField(source="submission_id")
    problem = serializers.IntegerField(source="problem_id")

    class Meta:
        model = ProblemScore
        fields = ["submission", "problem", "protocol", "status", "attempt", "correct", "faster", "flagged",
                  "speedup", "speedup_lo", "speedup_hi", "attempts_correct", "attempts_total"]


class UploadSerializer(serializers.Serializer):
    """Multipart fields of POST /api/v1/submissions/ (metadata may also come from submission.json)."""

    archive = serializers.FileField(required=False, help_text=".zip, .tar, .tar.gz or .tgz in PKB layout")
    files = serializers.ListField(child=serializers.FileField(), required=False,
                                  help_text="the files of a directory; give their relative paths in 'paths'")
    paths = serializers.CharField(required=False, max_length=1_000_000, validators=[check_paths],
                                  help_text="JSON list of relative paths, one per file")
    model = Text(200, required=False, allow_blank=True)
    # Aliases (one-shot, agentic...) are resolved by uploads.clean_metadata, which also checks the value.
    protocol = Text(40, required=False, allow_blank=True, help_text="one_shot, best_of_k or agentic_feedback")
    attempts = AsciiIntegerField(required=False, min_value=1, max_value=10_000)
    profile = serializers.SlugField(required=False, max_length=50, allow_blank=True)
    agent = Text(200, required=False, allow_blank=True)
    agent_version = Text(100, required=False, allow_blank=True)
    backend = Text(40, required=False, allow_blank=True)
    selection = Text(40, required=False, allow_blank=True,
                     help_text="first, last, best_measured or self_selected")
    tokens = AsciiIntegerField(required=False, min_value=0, max_value=2**53)
    dollars = serializers.DecimalField(required=False, max_digits=12, decimal_places=2, min_value=0)
    label = Text(200, required=False, allow_blank=True)
    notes = serializers.CharField(required=False, allow_blank=True, max_length=5000)
    feedback_for = AsciiIntegerField(required=False, min_value=1, max_value=MAX_ID)
    publish = serializers.BooleanField(required=False, default=False)


class UploadErrorSerializer(serializers.Serializer):
    file = serializers.CharField()
    rule = serializers.CharField()
    message = serializers.CharField()


class RefusedSerializer(serializers.Serializer):
    detail = serializers.CharField()
    errors = UploadErrorSerializer(many=True)
    next_free_at = serializers.DateTimeField(required=False, allow_null=True)
