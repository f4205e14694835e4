"""REST API v1: the same selectors and services as the pages."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.accounts import selectors as accounts_selectors
from leaderboard.accounts import services as accounts_services
from leaderboard.api import response_shapes as shapes
from leaderboard.api import serializers as s
from leaderboard.api.auth import scoped
from leaderboard.catalogue import selectors as catalogue_selectors
from leaderboard.scoring import problem_selectors as scoring_problems
from leaderboard.scoring import selectors as scoring_selectors
from leaderboard.scoring import submission_selectors as scoring_submissions
from leaderboard.submissions import selectors as submissions_selectors
from leaderboard.submissions import services as submissions_services
from leaderboard.submissions import upload_handlers

PROFILE = OpenApiParameter("profile", str, description="hardware profile slug (default: the site's default)")
PROTOCOL = OpenApiParameter("protocol", str, enum=["one_shot", "best_of_k", "agentic_feedback"])
METADATA = (
    "model",
    "protocol",
    "attempts",
    "profile",
    "agent",
    "agent_version",
    "backend",
    "selection",
    "tokens",
    "dollars",
    "label",
    "notes",
    "feedback_for",
)


class ProfileList(APIView):
    permission_classes = [AllowAny]

    @extend_schema(responses=s.ProfileSerializer(many=True))
    def get(self, request):
        return Response(s.ProfileSerializer(catalogue_selectors.profiles(), many=True).data)


class ProblemList(APIView):
    permission_classes = [AllowAny]

    @extend_schema(parameters=[PROFILE, PROTOCOL], responses=s.ProblemSerializer(many=True))
    def get(self, request):
        profile = catalogue_selectors.profile_get(request.query_params.get("profile"))
        protocol = scoring_selectors.Filters.from_query(request.query_params).protocol
        return Response(s.ProblemSerializer(scoring_problems.problems_index(profile, protocol), many=True).data)


class ProblemDetail(APIView):
    permission_classes = [AllowAny]

    @extend_schema(
        parameters=[PROFILE, PROTOCOL, OpenApiParameter("page", int)], responses=shapes.ProblemDetailResponseSerializer
    )
    def get(self, request, key):
        problem = catalogue_selectors.problem_get(key)
        profile = catalogue_selectors.profile_get(request.query_params.get("profile"))
        filters = scoring_selectors.Filters.from_query(request.query_params)
        data = scoring_problems.problem_scores(problem, profile, filters.protocol, filters.page)
        return Response(
            {
                "problem": s.ProblemDetailSerializer(problem).data,
                "profile": profile.slug,
                "scores": s.ScoreSerializer(data["rows"], many=True).data,
                "more": data["more"],
            }
        )


class Leaderboard(APIView):
    permission_classes = [AllowAny]

    @extend_schema(
        parameters=[
            PROTOCOL,
            OpenApiParameter("backend", str),
            OpenApiParameter("k", int),
            OpenApiParameter("sort", str, enum=list(scoring_selectors.SORTS)),
            s.LeaderboardQuery,
        ],
        responses={200: shapes.LeaderboardResponseSerializer, 404: shapes.ErrorSerializer},
    )
    def get(self, request, slug):
        profile = catalogue_selectors.profile_get(slug)
        filters = scoring_selectors.Filters.from_query(request.query_params)
        window = s.LeaderboardQuery(data=request.query_params)
        window.is_valid(raise_exception=True)
        offset, limit = window.validated_data["offset"], window.validated_data["limit"]
        # One reverse() a request, not one a row: "/submissions/1/" with the id put in.
        head, _, tail = reverse("submission", args=[1]).rpartition("/1/")
        url = lambda pk: f"{head}/{pk}/{tail}"  # noqa: E731
        sections = []
        for protocol in [filters.protocol] if filters.protocol else scoring_selectors.PROTOCOL_ORDER:
            filters.protocol = protocol
            rows = scoring_selectors.leaderboard_rows(profile, filters, offset, limit + 1)
            sections.append(
                {
                    "protocol": protocol,
                    "offset": offset,
                    "more": len(rows) > limit,
                    "entries": [s.entry_row(row, url) for row in rows[:limit]],
                }
            )
        return Response({"profile": profile.slug, "ranked_profile": profile.ranked, "sections": sections})


class SubmissionList(APIView):
    parser_classes = [MultiPartParser, FormParser]

    def get_permissions(self):
        return [scoped("submit")()] if self.request.method == "POST" else [scoped("read")()]

    @extend_schema(responses=s.SubmissionSerializer(many=True))
    def get(self, request):
        return Response(s.SubmissionSerializer(submissions_selectors.submissions_of(request.user), many=True).data)

    @extend_schema(
        request={"multipart/form-data": s.UploadSerializer},
        responses={201: shapes.SubmissionCreatedSerializer, 400: shapes.RefusedSerializer, 429: shapes.ErrorSerializer},
    )
    def post(self, request):
        upload = s.UploadSerializer(data=request.data)
        upload.is_valid(raise_exception=True)
        submitter = accounts_services.submitter_for(request.user)
        fields = {key: value for key, value in upload.validated_data.items() if key in METADATA}
        # Refusals (UploadRejected: 400, nothing stored; QuotaExceeded: 429) are answered by api/errors.py.
        submission = submissions_services.submission_create(
            submitter, fields, upload_handlers.request_files(request.FILES, request.data)
        )
        if upload.validated_data["publish"]:
            submissions_services.submission_publish(submission, request.user)
            submission.refresh_from_db()
        data = s.SubmissionSerializer(submission).data
        data["jobs"] = submission.jobs.count()
        data["url"] = request.build_absolute_uri(submission.get_absolute_url())
        return Response(data, status=status.HTTP_201_CREATED)


class SubmissionDetail(APIView):
    def get_permissions(self):
        return [scoped("submit")()] if self.request.method == "DELETE" else [AllowAny()]

    @extend_schema(request=None, responses={204: None, 403: shapes.ErrorSerializer, 404: shapes.ErrorSerializer})
    def delete(self, request, pk):
        """Delete an unpublished submission of yours (none of its evaluations queued or running)."""
        submissions_services.submission_delete(submissions_selectors.submission_get(pk, request.user), request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(responses={200: shapes.SubmissionDetailResponseSerializer, 404: shapes.ErrorSerializer})
    def get(self, request, pk):
        submission = submissions_selectors.submission_get(pk, request.user)
        data = s.SubmissionSerializer(submission).data
        # Whether the caller may publish, withdraw or delete it (its owner, or staff): pkb publish asks this first.
        data["editable"] = bool(submission.is_owner(request.user) or request.user.is_staff)
        data["status"] = scoring_submissions.submission_status(submission)
        data["scores"] = s.ScoreSerializer(
            submission.scores.exclude(status="missing").order_by("problem_id"), many=True
        ).data
        data["transcripts"] = [  # owner-only until published, like code (transcripts_of gives none otherwise)
            {
                "id": t["id"],
                "filename": t["filename"],
                "problem_id": t["problem_id"],
                "attempt": t["attempt"],
                "steps": t["steps"],
                "url": request.build_absolute_uri(reverse("transcript", args=[t["id"]])),
            }
            for t in submissions_selectors.transcripts_of(submission, request.user)
        ]
        data["audits"] = s.AuditSerializer(
            scoring_selectors.audits_visible(request.user, submission.pk), many=True
        ).data
        return Response(data)


class SubmissionStatus(APIView):
    permission_classes = [AllowAny]

    @extend_schema(responses={200: shapes.SubmissionStatusSerializer, 404: shapes.ErrorSerializer})
    def get(self, request, pk):
        return Response(scoring_submissions.submission_status(submissions_selectors.submission_get(pk, request.user)))


class _VisibilityChange(APIView):
    """A POST that changes the visibility of one of your submissions with ``change`` (a service; its NotAllowed is
    answered 403 by api/errors.py)."""

    permission_classes = [scoped("submit")]
    change = None

    @extend_schema(request=None, responses=s.SubmissionSerializer)
    def post(self, request, pk):
        submission = submissions_selectors.submission_get(pk, request.user)
        self.change(submission, request.user)
        return Response(s.SubmissionSerializer(submission).data)


class SubmissionPublish(_VisibilityChange):
    """List a submission of yours on the leaderboard (its code and logs become public)."""

    change = staticmethod(lambda submission, user: submissions_services.submission_publish(submission, user))


class SubmissionWithdraw(_VisibilityChange):
    """Take a published submission of yours off every leaderboard and export (its results stay yours)."""

    change = staticmethod(lambda submission, user: submissions_services.submission_withdraw(submission, user))


class SubmissionRerun(APIView):
    permission_classes = [scoped("submit")]

    @extend_schema(request=None, parameters=[s.RerunQuery], responses=shapes.RerunResponseSerializer)
    def post(self, request, pk):
        submission = submissions_selectors.submission_get(pk, request.user)
        only = s.RerunQuery(data=request.query_params)
        only.is_valid(raise_exception=True)
        count = submissions_services.submission_rerun(
            submission, request.user, only_failed=only.validated_data.get("only") == "failed"
        )
        return Response({"queued": count})


class Me(APIView):
    permission_classes = [scoped("read")]

    @extend_schema(responses=shapes.MeSerializer)
    def get(self, request):
        submitter = accounts_services.submitter_for(request.user)
        quota = accounts_selectors.quota_status(submitter)
        return Response({"username": request.user.get_username(), "quota": quota})


class AuditList(APIView):
    """Staff audits of listed submissions' results (and of whole submissions), newest first: clean, reward hack (out
    of ranking, as a flag), rubric leak, interesting; ?submission= narrows to one."""

    permission_classes = [AllowAny]

    @extend_schema(parameters=[s.AuditQuery], responses=s.AuditSerializer(many=True))
    def get(self, request):
        query = s.AuditQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        audits = scoring_selectors.audits_visible(request.user, query.validated_data.get("submission"))
        return Response(s.AuditSerializer(audits, many=True).data)
