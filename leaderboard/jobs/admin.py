"""Admin of the jobs app."""

from __future__ import annotations

from django.contrib import admin, messages

from leaderboard.jobs import services as jobs_services
from leaderboard.jobs.models import EvaluationJob, Result


@admin.register(EvaluationJob)
class EvaluationJobAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "submission",
        "candidate",
        "profile",
        "status",
        "run",
        "attempts",
        "lease_owner",
        "lease_expires_at",
    ]
    list_filter = ["status", "profile"]
    raw_id_fields = ["candidate", "submission", "submitter"]
    readonly_fields = [f.name for f in EvaluationJob._meta.fields]
    actions = ["rerun"]

    @admin.action(description="Re-run (free)")
    def rerun(self, request, queryset):
        count = jobs_services.jobs_rerun(list(queryset), None)
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
