"""REST API of the feedback loop (token auth like the rest of /api/v1/: ``Authorization: Bearer pkb_...``), routed in
leaderboard/urls.py.

    POST /api/v1/feedback/                      queue one feedback run (scope submit): session, problem, code|file
    GET  /api/v1/feedback/runs/<id>/            its status, then the structured feedback (scope read, owner only)
    POST /api/v1/feedback/sessions/             open a session (scope submit): profile, label
    GET  /api/v1/feedback/sessions/             your sessions
    GET  /api/v1/feedback/sessions/<id>/        metering totals and runs
    POST /api/v1/feedback/sessions/<id>/link/   link an agentic submission (closes the session; cannot be undone)
    POST /api/v1/feedback/sessions/<id>/close/  close without linking
    GET  /api/v1/feedback/seeds/<problem>/      the published public seeds of a problem (no auth)
    GET  /api/v1/feedback/quota/                your feedback quota
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.accounts import services as accounts_services
from leaderboard.api.auth import scoped
from leaderboard.api.parsers import JSONParser
from leaderboard.api.serializers import AsciiIntegerField, Text
from leaderboard.catalogue import selectors as catalogue_selectors
from leaderboard.catalogue.converters import ProblemKeyConverter
from leaderboard.feedback import seeds, selectors, services
from leaderboard.submissions import selectors as submissions_selectors
from leaderboard.submissions import upload_handlers
from leaderboard.validators import MAX_ID


class RunRequest(serializers.Serializer):
    session = AsciiIntegerField(min_value=1, max_value=MAX_ID, help_text="an open feedback session of yours")
    problem = serializers.RegexField(
        rf"^(?:{ProblemKeyConverter.regex})\Z", max_length=90, help_text="id (1) or PKB stem (1_allreduce)"
    )
    code = serializers.CharField(
        required=False,
        trim_whitespace=False,
        max_length=4 * 1024 * 1024,
        help_text="the candidate's source (or send it as 'file')",
    )
    file = serializers.FileField(required=False, help_text="multipart: the candidate .py file")
    filename = Text(200, required=False, allow_blank=True)
    M = AsciiIntegerField(required=False, min_value=1, max_value=2**31 - 1)
    N = AsciiIntegerField(required=False, min_value=1, max_value=2**31 - 1)


class SessionRequest(serializers.Serializer):
    profile = serializers.SlugField(
        required=False, max_length=50, allow_blank=True, help_text="hardware profile slug (default: the site's default)"
    )
    label = Text(200, required=False, allow_blank=True)


class LinkRequest(serializers.Serializer):
    submission = AsciiIntegerField(min_value=1, max_value=MAX_ID)


# The services' refusals (Refused, QuotaExceeded, NotAllowed) are answered by leaderboard/api/errors.py.
OBJECT = OpenApiTypes.OBJECT


class FeedbackRunCreate(APIView):
    permission_classes = [scoped("submit")]
    parser_classes = [JSONParser, MultiPartParser, FormParser]

    @extend_schema(
        request={"application/json": RunRequest, "multipart/form-data": RunRequest},
        responses={202: OBJECT, 400: OBJECT, 429: OBJECT},
    )
    def post(self, request):
        checked = RunRequest(data=request.data)
        checked.is_valid(raise_exception=True)
        data = checked.validated_data
        upload = data.get("file")
        if upload is not None:
            upload_handlers.upload_size_check([upload])
            code, filename = upload.read(), data.get("filename") or upload.name
        else:
            code, filename = data.get("code"), data.get("filename") or ""
        if code in (None, ""):
            return Response(
                {
                    "detail": "send the candidate as 'code' or as a 'file'",
                    "errors": [{"field": "code", "message": "missing"}],
                },
                status=400,
            )
        submitter = accounts_services.submitter_for(request.user)
        run = services.run_create(
            submitter, data.get("session"), data.get("problem"), code, filename, data.get("M"), data.get("N")
        )
        return Response(selectors.run_dict(run, request), status=status.HTTP_202_ACCEPTED)


class FeedbackRunDetail(APIView):
    permission_classes = [scoped("read")]

    @extend_schema(responses=OBJECT)
    def get(self, request, pk):
        return Response(selectors.run_dict(selectors.run_get(pk, request.user), request))


class SessionList(APIView):
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    def get_permissions(self):
        return [scoped("submit")()] if self.request.method == "POST" else [scoped("read")()]

    # Its own operationId: drf-spectacular named this list and SessionDetail's read alike (issue 35, defect 10).
    @extend_schema(
        operation_id="feedback_sessions_list", responses={200: {"type": "array", "items": {"type": "object"}}}
    )
    def get(self, request):
        return Response(selectors.sessions_dicts(selectors.sessions_of(request.user)))

    @extend_schema(request=SessionRequest, responses={201: OBJECT, 400: OBJECT})
    def post(self, request):
        checked = SessionRequest(data=request.data)
        checked.is_valid(raise_exception=True)
        submitter = accounts_services.submitter_for(request.user)
        session = services.session_open(
            submitter, checked.validated_data.get("profile"), checked.validated_data.get("label", "")
        )
        return Response(selectors.session_dict(session), status=status.HTTP_201_CREATED)


class SessionDetail(APIView):
    permission_classes = [AllowAny]  # the owner; anyone once its linked submission is public

    @extend_schema(responses=OBJECT)
    def get(self, request, pk):
        return Response(selectors.session_dict(selectors.session_get(pk, request.user)))


class SessionLink(APIView):
    permission_classes = [scoped("submit")]
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    @extend_schema(request=LinkRequest, responses={200: OBJECT, 400: OBJECT, 403: OBJECT})
    def post(self, request, pk):
        session = selectors.session_get(pk, request.user)
        checked = LinkRequest(data=request.data)
        checked.is_valid(raise_exception=True)
        submission = submissions_selectors.submission_get(checked.validated_data["submission"], request.user)
        session = services.session_link(session, submission, request.user)
        return Response(selectors.session_dict(session, with_runs=False))


class SessionClose(APIView):
    permission_classes = [scoped("submit")]

    @extend_schema(request=None, responses=OBJECT)
    def post(self, request, pk):
        session = selectors.session_get(pk, request.user)
        services.session_close(session, request.user)
        return Response(selectors.session_dict(session, with_runs=False))


class PublicSeeds(APIView):
    permission_classes = [AllowAny]

    @extend_schema(responses=OBJECT)
    def get(self, request, key):
        problem = catalogue_selectors.problem_get(key)
        return Response(
            {
                "problem": problem.stem,
                "problem_id": problem.id,
                "seeds": seeds.public_seeds(problem.id),
                "rule": "a run with T trials uses the first T seeds, then the last one (the re-check after "
                "timing); reproduce with: pkb eval PROBLEM FILE --trials T --seeds <those T + 1>",
            }
        )


class Quota(APIView):
    permission_classes = [scoped("read")]

    @extend_schema(responses=OBJECT)
    def get(self, request):
        return Response(services.quota_status(accounts_services.submitter_for(request.user)))
