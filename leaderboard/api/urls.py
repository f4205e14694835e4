from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from leaderboard.api import metadata, root, views

urlpatterns = [
    path("", root.ApiRoot.as_view(), name="api-root"),  # every endpoint, from these routes (api/root.py)
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Swagger UI from the site's own static files (drf-spectacular-sidecar), its set-up script a separate file
    # (the split view), so the CSP's script-src 'self' holds.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("profiles/", views.ProfileList.as_view(), name="api-profiles"),
    path("problems/", views.ProblemList.as_view(), name="api-problems"),
    path("problems/<problem:key>/", views.ProblemDetail.as_view(), name="api-problem"),
    path("leaderboard/<slug:slug>/", views.Leaderboard.as_view(), name="api-leaderboard"),
    path("submissions/", views.SubmissionList.as_view(), name="api-submissions"),
    path("submissions/<id:pk>/", metadata.SubmissionDetail.as_view(), name="api-submission"),  # GET, PATCH, DELETE
    path("submissions/<id:pk>/status/", views.SubmissionStatus.as_view(), name="api-submission-status"),
    path("submissions/<id:pk>/publish/", views.SubmissionPublish.as_view(), name="api-submission-publish"),
    path("submissions/<id:pk>/withdraw/", views.SubmissionWithdraw.as_view(), name="api-submission-withdraw"),
    path("submissions/<id:pk>/rerun/", views.SubmissionRerun.as_view(), name="api-submission-rerun"),
    path("me/", views.Me.as_view(), name="api-me"),
    path("audits/", views.AuditList.as_view(), name="api-audits"),
]
