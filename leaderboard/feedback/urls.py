"""Routes of the feedback app: included once from leaderboard/urls.py (API under /api/v1/feedback/, pages under
/feedback/ and two owner actions on /submissions/<pk>/)."""
from django.urls import path

from leaderboard.feedback import api, views

urlpatterns = [
    path("api/v1/feedback/", api.FeedbackRunCreate.as_view(), name="api-feedback"),
    path("api/v1/feedback/runs/<id:pk>/", api.FeedbackRunDetail.as_view(), name="api-feedback-run"),
    path("api/v1/feedback/sessions/", api.SessionList.as_view(), name="api-feedback-sessions"),
    path("api/v1/feedback/sessions/<id:pk>/", api.SessionDetail.as_view(), name="api-feedback-session"),
    path("api/v1/feedback/sessions/<id:pk>/link/", api.SessionLink.as_view(), name="api-feedback-session-link"),
    path("api/v1/feedback/sessions/<id:pk>/close/", api.SessionClose.as_view(), name="api-feedback-session-close"),
    path("api/v1/feedback/seeds/<problem:key>/", api.PublicSeeds.as_view(), name="api-feedback-seeds"),
    path("api/v1/feedback/quota/", api.Quota.as_view(), name="api-feedback-quota"),
    path("feedback/sessions/<id:pk>/", views.session_detail, name="feedback-session"),
    path("feedback/runs/<id:pk>/", views.run_detail, name="feedback-run"),
    path("feedback/runs/<id:pk>/trace.json.gz", views.run_trace, name="feedback-run-trace"),
    path("submissions/<id:pk>/profile", views.submission_profile, name="submission-profile"),
    path("submissions/<id:pk>/feedback-session", views.submission_link, name="submission-feedback-link"),
]
