"""Admin of the accounts app."""

from __future__ import annotations

from django.contrib import admin

from leaderboard.accounts import services as accounts_services
from leaderboard.accounts.models import ApiToken, Submitter


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
            accounts_services.token_revoke(token)
