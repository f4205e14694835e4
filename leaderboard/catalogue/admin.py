"""Admin of the catalogue app."""

from __future__ import annotations

from django.contrib import admin

from leaderboard.catalogue.models import HardwareProfile, Problem


@admin.register(Problem)
class ProblemAdmin(admin.ModelAdmin):
    list_display = ["id", "stem", "category", "implemented"]
    list_filter = ["implemented", "category"]
    search_fields = ["stem", "title"]
    readonly_fields = ["reference_html"]


@admin.register(HardwareProfile)
class HardwareProfileAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "device", "world_size", "ranked", "multicast_allowed", "timing_pairs", "accepting"]
