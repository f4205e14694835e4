"""Admin of the scoring app."""

from __future__ import annotations

from django import forms
from django.contrib import admin

from leaderboard.scoring.models import Audit, LeaderboardEntry
from leaderboard.scoring.services import attempted_problems, audit_record, audits_refresh, problem_refusal


class AuditAdminForm(forms.ModelForm):
    """A problem the submission never attempted is this form's error (naming the ones it did), not a server error."""

    class Meta:
        model = Audit
        fields = ["submission", "problem", "verdict", "note"]

    def clean(self):
        cleaned = super().clean()
        submission, problem = cleaned.get("submission"), cleaned.get("problem")
        if submission is not None and problem is not None:
            attempted = attempted_problems(submission)
            if problem.pk not in attempted:
                self.add_error("problem", problem_refusal(problem.pk, attempted))
        return cleaned


@admin.register(LeaderboardEntry)
class LeaderboardEntryAdmin(admin.ModelAdmin):
    list_display = ["submission", "profile", "protocol", "correct", "faster", "geomean_speedup", "listed", "ranked"]
    list_filter = ["profile", "protocol", "listed", "ranked"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Audit)
class AuditAdmin(admin.ModelAdmin):
    """Staff audits: saved through scoring.services.audit_record, so the cell, the solve rates and the leaderboard
    row follow at once (a reward hack counts as a flag); deleting one refreshes them the same way."""

    form = AuditAdminForm
    list_display = ["submission", "problem", "verdict", "auditor", "updated_at"]
    list_filter = ["verdict"]
    search_fields = ["note", "submission__model_name"]
    raw_id_fields = ["submission", "problem", "result"]
    readonly_fields = ["auditor", "result", "created_at", "updated_at"]

    def save_model(self, request, obj, form, change):
        saved = audit_record(obj.submission, obj.problem_id, obj.verdict, obj.note, request.user)
        obj.pk, obj.auditor, obj.result_id = saved.pk, saved.auditor, saved.result_id

    def delete_model(self, request, obj):
        submission, problem_id = obj.submission, obj.problem_id
        super().delete_model(request, obj)
        audits_refresh(submission, problem_id)
