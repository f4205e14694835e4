"""Admin of the scoring app."""
from __future__ import annotations

from django.contrib import admin

from leaderboard.scoring.models import LeaderboardEntry


@admin.register(LeaderboardEntry)
class LeaderboardEntryAdmin(admin.ModelAdmin):
    list_display = ["submission", "profile", "protocol", "correct", "faster", "geomean_speedup", "listed", "ranked"]
    list_filter = ["profile", "protocol", "listed", "ranked"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
