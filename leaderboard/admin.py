"""Staff tools: flag, hide, re-run and verify submissions; results are read-only (append-only)."""
from django.contrib import admin, messages

from leaderboard import services
from leaderboard.models import (
    ApiToken,
    EvaluationJob,
    HardwareProfile,
    LeaderboardEntry,
    Problem,
    Result,
    Submission,
    Submitter,
)


@admin.register(Problem)
class ProblemAdmin(admin.ModelAdmin):
    list_display = ["id", "stem", "category", "implemented"]
    list_filter = ["implemented", "category"]
    search_fields = ["stem", "title"]
    readonly_fields = ["reference_html"]


@admin.register(HardwareProfile)
class HardwareProfileAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "device", "world_size", "ranked", "multicast_allowed", "timing_pairs", "accepting"]


@admin.register(Submitter)
class SubmitterAdmin(admin.ModelAdmin):
    list_display = ["user", "display_name", "quota_daily", "quota_total", "quota_concurrent"]
    search_fields = ["user__username", "display_name"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "prefix", "submitter", "scopes", "expires_at", "revoked_at", "last_used_at"]
    readonly_fields = ["prefix", "digest", "created_at", "last_used_at"]
    actions = ["revoke"]

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset):
        for token in queryset:
            services.token_revoke(token)


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ["id", "model_name", "submitter", "profile", "protocol", "attempts_k", "visibility", "flagged",
                    "verified", "created_at"]
    list_filter = ["profile", "protocol", "visibility", "flagged", "verified"]
    search_fields = ["model_name", "agent", "submitter__user__username", "label"]
    readonly_fields = ["feedback_runs", "gpu_seconds", "archive_sha256", "created_at", "published_at"]
    actions = ["flag", "unflag", "hide", "unhide", "rerun", "mark_verified", "unmark_verified"]

    @admin.action(description="Flag (never ranked)")
    def flag(self, request, queryset):
        for submission in queryset:
            services.submission_flag(submission, f"flagged by {request.user.get_username()}")

    @admin.action(description="Remove the flag")
    def unflag(self, request, queryset):
        for submission in queryset:
            services.submission_flag(submission, "", flagged=False)

    @admin.action(description="Hide from every page")
    def hide(self, request, queryset):
        for submission in queryset:
            services.submission_set_visibility(submission, "hidden")

    @admin.action(description="Un-hide (back to private; the owner publishes)")
    def unhide(self, request, queryset):
        for submission in queryset.filter(visibility="hidden"):
            services.submission_set_visibility(submission, "private")

    @admin.action(description="Re-run every evaluation (free)")
    def rerun(self, request, queryset):
        count = sum(services.submission_rerun(submission, request.user) for submission in queryset)
        self.message_user(request, f"{count} evaluation(s) queued again.", messages.SUCCESS)

    @admin.action(description="Mark verified")
    def mark_verified(self, request, queryset):
        for submission in queryset:
            services.submission_verify(submission, True)

    @admin.action(description="Remove verified mark")
    def unmark_verified(self, request, queryset):
        for submission in queryset:
            services.submission_verify(submission, False)

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        services.entry_refresh(obj)


@admin.register(EvaluationJob)
class EvaluationJobAdmin(admin.ModelAdmin):
    list_display = ["id", "submission", "candidate", "profile", "status", "run", "attempts", "lease_owner",
                    "lease_expires_at"]
    list_filter = ["status", "profile"]
    raw_id_fields = ["candidate", "submission", "submitter"]
    readonly_fields = [f.name for f in EvaluationJob._meta.fields]
    actions = ["rerun"]

    @admin.action(description="Re-run (free)")
    def rerun(self, request, queryset):
        count = services.jobs_rerun(list(queryset), None)
        self.message_user(request, f"{count} evaluation(s) queued again.", messages.SUCCESS)

    def has_add_permission(self, request):
        return False


@admin.register(Result)
class ResultAdmin(admin.ModelAdmin):
    list_display = ["id", "job", "run", "claim", "verdict", "speedup", "faster", "flags", "created_at"]
    list_filter = ["verdict"]
    raw_id_fields = ["job"]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in Result._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(LeaderboardEntry)
class LeaderboardEntryAdmin(admin.ModelAdmin):
    list_display = ["submission", "profile", "protocol", "correct", "faster", "geomean_speedup", "listed", "ranked"]
    list_filter = ["profile", "protocol", "listed", "ranked"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
