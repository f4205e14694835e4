"""Staff: feedback sessions and runs are read-only records; per-user feedback quotas are editable."""

from django.contrib import admin

from leaderboard.feedback.models import FeedbackQuota, FeedbackRun, FeedbackSession


@admin.register(FeedbackSession)
class FeedbackSessionAdmin(admin.ModelAdmin):
    list_display = ["id", "submitter", "profile", "label", "created_at", "closed_at", "submission"]
    list_filter = ["profile"]
    search_fields = ["submitter__user__username", "label"]
    readonly_fields = ["submitter", "profile", "created_at", "closed_at", "submission", "linked_at"]


@admin.register(FeedbackRun)
class FeedbackRunAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "kind",
        "submitter",
        "profile",
        "problem",
        "status",
        "verdict",
        "wall_ms",
        "gpu_ms",
        "refunded_at",
        "created_at",
    ]
    list_filter = ["kind", "status", "profile"]
    search_fields = ["submitter__user__username", "problem__stem"]
    exclude = ["trace_gz"]

    def has_change_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request):
        return False


@admin.register(FeedbackQuota)
class FeedbackQuotaAdmin(admin.ModelAdmin):
    list_display = ["submitter", "daily", "concurrent"]
    search_fields = ["submitter__user__username"]
