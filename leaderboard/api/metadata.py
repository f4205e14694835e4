"""``PATCH /api/v1/submissions/<id>/``: the owner corrects a submission's self-reported metadata (model, agent,
label, notes, self-reported cost); the change is recorded and shown on its page. The protocol, k, profile and files
are refused with the reason (a new submission) and how the duplicate rule lets one make it. The service:
leaderboard/submissions/metadata.py."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response

from leaderboard.api import serializers as s
from leaderboard.api import views
from leaderboard.api.auth import scoped
from leaderboard.submissions import metadata
from leaderboard.submissions import selectors as submissions_selectors


class MetadataPatchSerializer(serializers.Serializer):
    """The fields one may correct; any other field (protocol, attempts, profile, files...) is refused with a 400."""

    model = serializers.CharField(required=False, max_length=200)
    agent = serializers.CharField(required=False, allow_blank=True, max_length=200)
    agent_version = serializers.CharField(required=False, allow_blank=True, max_length=100)
    label = serializers.CharField(required=False, allow_blank=True, max_length=200)
    notes = serializers.CharField(required=False, allow_blank=True, max_length=5000)
    tokens = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, help_text="self-reported tokens used"
    )
    dollars = serializers.DecimalField(
        required=False,
        allow_null=True,
        max_digits=12,
        decimal_places=2,
        min_value=0,
        help_text="self-reported dollars spent",
    )


class MetadataChangeSerializer(serializers.Serializer):
    changed_at = serializers.DateTimeField()
    changed_by = serializers.CharField(source="changed_by.username", default=None, allow_null=True)
    changes = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField(allow_blank=True)), help_text="field -> [old, new]"
    )


class MetadataPatchResponseSerializer(serializers.Serializer):
    submission = s.SubmissionSerializer()
    changed = serializers.ListField(child=serializers.CharField(), help_text="the fields this request changed")
    history = MetadataChangeSerializer(many=True, help_text="every correction, oldest first")


class FieldErrorSerializer(serializers.Serializer):
    field = serializers.CharField()
    message = serializers.CharField()


class MetadataRefusedSerializer(serializers.Serializer):
    detail = serializers.CharField()
    errors = FieldErrorSerializer(many=True, required=False, help_text="one per refused field (400 only)")


class SubmissionDetail(views.SubmissionDetail):
    """The submission's endpoint (GET, DELETE: api/views.py) with the correction of its metadata (PATCH)."""

    parser_classes = [JSONParser, FormParser, MultiPartParser]

    def get_permissions(self):
        if self.request.method == "PATCH":
            return [scoped("submit")()]
        return super().get_permissions()

    @extend_schema(
        request=MetadataPatchSerializer,
        responses={
            200: MetadataPatchResponseSerializer,
            400: MetadataRefusedSerializer,
            403: MetadataRefusedSerializer,
            404: MetadataRefusedSerializer,
        },
    )
    def patch(self, request, pk):
        """Correct the model, agent, label, notes or self-reported cost of a submission of yours (recorded, shown on
        its page). The protocol, k, profile and files cannot change: that is a new submission."""
        submission = submissions_selectors.submission_get(pk, request.user)
        raw = {key: request.data.get(key) for key in request.data}
        try:
            change = metadata.metadata_update(submission, request.user, raw)
        except metadata.MetadataRefused as refused:
            return Response(
                {
                    "detail": "metadata not changed: " + str(refused),
                    "errors": [{"field": k, "message": v} for k, v in refused.errors.items()],
                },
                status=400,
            )
        return Response(
            {
                "submission": s.SubmissionSerializer(submission).data,
                "changed": list(change.changes) if change else [],
                "history": MetadataChangeSerializer(metadata.history(submission), many=True).data,
            }
        )
