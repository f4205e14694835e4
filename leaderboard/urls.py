from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, register_converter

from leaderboard.api import feedback as feedback_api
from leaderboard.catalogue import converters
from leaderboard.ops import views as ops_views
from leaderboard.pages import accounts_views, metadata_views, problem_views, records_views, result_views, views
from leaderboard.pages import feedback as feedback_views

# Registered before the routes below and the API's (included) use them.
register_converter(converters.IdConverter, "id")
register_converter(converters.ProblemKeyConverter, "problem")
handler400 = "leaderboard.pages.views.bad_request"
handler404 = "leaderboard.pages.views.not_found"
handler500 = "leaderboard.pages.views.server_error"

# The feedback loop and profile runs (issue 10; docs/feedback.md): its API (leaderboard/api/feedback.py) under
# /api/v1/feedback/, its pages (leaderboard/pages/feedback.py) under /feedback/ and two owner actions on /submissions/.
feedback_urlpatterns = [
    path("api/v1/feedback/", feedback_api.FeedbackRunCreate.as_view(), name="api-feedback"),
    path("api/v1/feedback/runs/<id:pk>/", feedback_api.FeedbackRunDetail.as_view(), name="api-feedback-run"),
    path("api/v1/feedback/sessions/", feedback_api.SessionList.as_view(), name="api-feedback-sessions"),
    path("api/v1/feedback/sessions/<id:pk>/", feedback_api.SessionDetail.as_view(), name="api-feedback-session"),
    path(
        "api/v1/feedback/sessions/<id:pk>/link/", feedback_api.SessionLink.as_view(), name="api-feedback-session-link"
    ),
    path(
        "api/v1/feedback/sessions/<id:pk>/close/",
        feedback_api.SessionClose.as_view(),
        name="api-feedback-session-close",
    ),
    path("api/v1/feedback/seeds/<problem:key>/", feedback_api.PublicSeeds.as_view(), name="api-feedback-seeds"),
    path("api/v1/feedback/quota/", feedback_api.Quota.as_view(), name="api-feedback-quota"),
    path("feedback/sessions/<id:pk>/", feedback_views.session_detail, name="feedback-session"),
    path("feedback/runs/<id:pk>/", feedback_views.run_detail, name="feedback-run"),
    path("feedback/runs/<id:pk>/trace.json.gz", feedback_views.run_trace, name="feedback-run-trace"),
    path("submissions/<id:pk>/profile", feedback_views.submission_profile, name="submission-profile"),
    path("submissions/<id:pk>/feedback-session", feedback_views.submission_link, name="submission-feedback-link"),
]

urlpatterns = [
    path("", views.home, name="home"),
    path("leaderboard/", views.leaderboard_index, name="leaderboard-index"),
    path("leaderboard/<slug:slug>/", views.leaderboard, name="leaderboard"),
    path("getting-started/", views.getting_started, name="getting-started"),
    path("exploits/", views.exploits_page, name="exploits"),
    path("audits/", records_views.audits_page, name="audits"),
    path("submissions/<id:pk>/audit", records_views.audit_record, name="submission-audit"),
    path("transcripts/<id:pk>/", records_views.transcript_page, name="transcript"),
    path("transcripts/<id:pk>/raw.jsonl", records_views.transcript_raw, name="transcript-raw"),
    path("problems/", problem_views.problems_index, name="problems"),
    path("problems/<problem:key>/", problem_views.problem_detail, name="problem"),
    path("problems/<problem:key>/reference.py", problem_views.problem_reference, name="problem-reference"),
    path("submissions/<id:pk>/", views.submission_detail, name="submission"),
    path("submissions/<id:pk>/status.json", views.submission_status, name="submission-status"),
    path("submissions/<id:pk>/publish", views.submission_publish, name="submission-publish"),
    path("submissions/<id:pk>/rerun", views.submission_rerun, name="submission-rerun"),
    path("submissions/<id:pk>/withdraw", views.submission_withdraw, name="submission-withdraw"),
    path("submissions/<id:pk>/delete", views.submission_delete, name="submission-delete"),
    path("submissions/<id:pk>/metadata", metadata_views.submission_metadata, name="submission-metadata"),
    path("candidates/<id:pk>/", result_views.candidate_page, name="candidate"),
    path("candidates/<id:pk>/code", result_views.candidate_code, name="candidate-code"),
    path("results/<id:pk>.json", result_views.result_detail, name="result"),
    path("results/<id:pk>/", result_views.result_logs_page, name="result-logs-page"),
    path("results/<id:pk>/logs", result_views.result_logs, name="result-logs"),
    path("submit/", views.submit, name="submit"),
    path("account/", views.account, name="account"),
    path("account/tokens/<id:pk>/revoke", accounts_views.token_revoke, name="token-revoke"),
    path("account/delete", accounts_views.account_delete, name="account-delete"),
    # Django's password views with the site's templates (templates/registration/); the reset e-mail goes through
    # EMAIL_BACKEND (the console unless configured).
    path("accounts/password/change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("accounts/password/change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("accounts/password/reset/", auth_views.PasswordResetView.as_view(), name="password_reset"),
    path("accounts/password/reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path(
        "accounts/password/reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path(
        "accounts/password/reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"
    ),
    path("accounts/signup/", views.signup, name="signup"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", ops_views.readyz, name="readyz"),  # the operator's endpoints: leaderboard/ops/views.py
    path("metrics", ops_views.metrics, name="metrics"),
    path("ops/workers/", ops_views.workers_page, name="ops-workers"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("", include(feedback_urlpatterns)),  # feedback loop and profile runs (issue 10)
    path("api/v1/", include("leaderboard.api.urls")),
    path("admin/", admin.site.urls),
]
