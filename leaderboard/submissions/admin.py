"""Admin of the submissions app."""

from __future__ import annotations

from django.contrib import admin, messages

from leaderboard.submissions import services as submissions_services
from leaderboard.submissions.models import Submission
from leaderboard.submissions.signals import entry_stale


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "model_name",
        "submitter",
        "profile",
        "protocol",
        "attempts_k",
        "visibility",
        "flagged",
        "verified",
        "created_at",
    ]
    list_filter = ["profile", "protocol", "visibility", "flagged", "verified"]
    search_fields = ["model_name", "agent", "submitter__user__username", "label"]
    readonly_fields = ["feedback_runs", "gpu_seconds", "archive_sha256", "created_at", "published_at"]
    actions = ["flag", "unflag", "hide", "unhide", "rerun", "mark_verified", "unmark_verified"]

    @admin.action(description="Flag (never ranked)")
    def flag(self, request, queryset):
        for submission in queryset:
            submissions_services.submission_flag(submission, f"flagged by {request.user.get_username()}")

    @admin.action(description="Remove the flag")
    def unflag(self, request, queryset):
        for submission in queryset:
            submissions_services.submission_flag(submission, "", flagged=False)

    @admin.action(description="Hide from every page")
    def hide(self, request, queryset):
        for submission in queryset:
            submissions_services.submission_set_visibility(submission, "hidden")

    @admin.action(description="Un-hide (back to private; the owner publishes)")
    def unhide(self, request, queryset):
        for submission in queryset.filter(visibility="hidden"):
            submissions_services.submission_set_visibility(submission, "private")

    @admin.action(description="Re-run every evaluation (free)")
    def rerun(self, request, queryset):
        count = sum(submissions_services.submission_rerun(submission, request.user) for submission in queryset)
        self.message_user(request, f"{count} evaluation(s) queued again.", messages.SUCCESS)

    @admin.action(description="Mark verified")
    def mark_verified(self, request, queryset):
        for submission in queryset:
            submissions_services.submission_verify(submission, True)

    @admin.action(description="Remove verified mark")
    def unmark_verified(self, request, queryset):
        for submission in queryset:
            submissions_services.submission_verify(submission, False)

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        entry_stale.send(Submission, submission=obj)
