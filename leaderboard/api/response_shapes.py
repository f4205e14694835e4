"""The API's response shapes: what its views answer when they build plain dicts (refusals, the quota, a submission's
status, the API root) or several reads in one (a leaderboard's sections, a submission's detail), declared as
serializers so that the OpenAPI schema describes them (the schema is the API: tests/site/api). The models' and the
queries' serializers are serializers.py's.
"""

from __future__ import annotations

from rest_framework import serializers

from leaderboard.api.serializers import (
    AuditSerializer,
    EntrySerializer,
    ProblemDetailSerializer,
    ScoreSerializer,
    SubmissionSerializer,
)


class UploadErrorSerializer(serializers.Serializer):
    """One refusal: an upload's file and rule, or a request's field."""

    file = serializers.CharField(required=False, help_text="the refused file (uploads)")
    field = serializers.CharField(required=False, help_text="the refused field (a request's fields)")
    rule = serializers.CharField(required=False)
    message = serializers.CharField()


class RefusedSerializer(serializers.Serializer):
    detail = serializers.CharField()
    errors = UploadErrorSerializer(many=True, required=False)
    next_free_at = serializers.DateTimeField(required=False, allow_null=True)


# --- response shapes of the views that build plain dicts (so the OpenAPI schema describes them) --------------------


class QuotaCountsSerializer(serializers.Serializer):
    daily = serializers.IntegerField()
    total = serializers.IntegerField()
    concurrent = serializers.IntegerField()


class QuotaSerializer(serializers.Serializer):
    usage = QuotaCountsSerializer()
    limits = QuotaCountsSerializer()
    daily_left = serializers.IntegerField()
    concurrent_left = serializers.IntegerField()
    total_left = serializers.IntegerField()
    next_daily_slot = serializers.DateTimeField(allow_null=True)


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    quota = QuotaSerializer()


class ProblemDetailResponseSerializer(serializers.Serializer):
    problem = ProblemDetailSerializer()
    profile = serializers.CharField(help_text="the profile slug the scores are on")
    scores = ScoreSerializer(many=True)
    more = serializers.BooleanField(help_text="another page follows (?page=)")


class JobCountsSerializer(serializers.Serializer):
    queued = serializers.IntegerField()
    running = serializers.IntegerField()
    done = serializers.IntegerField()
    failed = serializers.IntegerField()
    building = serializers.IntegerField(
        help_text="of the queued and running ones, those in the build stage (compiling on CPU cores, no GPU held yet)"
    )


class StatusEntrySerializer(serializers.Serializer):
    correct = serializers.IntegerField(required=False)
    faster = serializers.IntegerField(required=False)
    judged = serializers.IntegerField(required=False)
    pending = serializers.IntegerField(required=False)
    geomean_speedup = serializers.FloatField(required=False, allow_null=True)
    geomean_peak_fraction = serializers.FloatField(required=False, allow_null=True)
    peak_problems = serializers.IntegerField(required=False)


class FileStatusSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    file = serializers.CharField()
    problem = serializers.IntegerField()
    attempt = serializers.IntegerField()
    status = serializers.CharField()
    verdict = serializers.CharField(allow_null=True)
    speedup = serializers.FloatField(allow_null=True)
    faster = serializers.BooleanField()
    message = serializers.CharField(help_text="the verdict's reason (first 300 characters)")


class SubmissionStatusSerializer(serializers.Serializer):
    submission = serializers.IntegerField()
    jobs = JobCountsSerializer()
    finished = serializers.BooleanField()
    problems = serializers.DictField(child=serializers.CharField(), help_text="problem id -> its current status")
    entry = StatusEntrySerializer()
    files = FileStatusSerializer(many=True)


class RerunResponseSerializer(serializers.Serializer):
    queued = serializers.IntegerField(help_text="evaluations queued again")


class TranscriptRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    filename = serializers.CharField()
    problem_id = serializers.IntegerField(allow_null=True)
    attempt = serializers.IntegerField(allow_null=True)
    steps = serializers.IntegerField()
    url = serializers.CharField()


# --- the responses the views build from several reads (declared here so that the schema is the API) --------------


class ErrorSerializer(serializers.Serializer):
    """Every refusal: 400 (a bad parameter or upload), 401 (no or a bad token), 403 (not yours, or a token without
    the scope), 404, 405, 413, 415, 429 (a quota or the rate limit). ``errors`` says which field or file, where one
    does."""

    detail = serializers.CharField()
    errors = serializers.JSONField(required=False, help_text="per field (a dict) or per file (a list), where given")
    next_free_at = serializers.DateTimeField(required=False, allow_null=True, help_text="429: the next free slot")


class LeaderboardSectionSerializer(serializers.Serializer):
    protocol = serializers.CharField(help_text="one_shot, best_of_k or agentic_feedback")
    offset = serializers.IntegerField()
    more = serializers.BooleanField(help_text="more rows follow (?offset=)")
    entries = EntrySerializer(many=True)


class LeaderboardResponseSerializer(serializers.Serializer):
    profile = serializers.CharField(help_text="the profile's slug")
    ranked_profile = serializers.BooleanField(help_text="false: timings on this profile never rank (CPU)")
    sections = LeaderboardSectionSerializer(many=True, help_text="one per protocol (only ?protocol='s if given)")


class SubmissionCreatedSerializer(SubmissionSerializer):
    jobs = serializers.IntegerField(read_only=True, help_text="evaluations queued")

    class Meta(SubmissionSerializer.Meta):
        fields = SubmissionSerializer.Meta.fields + ["jobs"]


class SubmissionDetailResponseSerializer(SubmissionSerializer):
    """A submission with its status, its problems' scores, its transcripts (the owner's until published) and the
    staff's audits (the CLI reads ``editable`` and ``status``)."""

    editable = serializers.BooleanField(read_only=True, help_text="the caller may publish, withdraw or delete it")
    status = SubmissionStatusSerializer(read_only=True)
    scores = ScoreSerializer(many=True, read_only=True)
    transcripts = TranscriptRefSerializer(many=True, read_only=True)
    audits = AuditSerializer(many=True, read_only=True)

    class Meta(SubmissionSerializer.Meta):
        fields = SubmissionSerializer.Meta.fields + ["editable", "status", "scores", "transcripts", "audits"]


class ApiRootSerializer(serializers.Serializer):
    """The API root: each endpoint's URL; {placeholders} stand for an id, a slug or a stem."""

    docs = serializers.CharField()
    schema = serializers.CharField()
    profiles = serializers.CharField()
    problems = serializers.CharField()
    problem = serializers.CharField()
    leaderboard = serializers.CharField()
    submissions = serializers.CharField()
    submission = serializers.CharField()
    submission_status = serializers.CharField()
    me = serializers.CharField()
    audits = serializers.CharField()
