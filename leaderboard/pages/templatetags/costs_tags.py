"""Template filters for measured costs, by leaderboard/scoring/costs.py's definitions (one unit rule for every page).

{% load costs_tags %}
{{ profile.device|device_unit }}     GPU·s on a GPU profile, rank·s on a CPU one
{{ run|device_seconds }}             a feedback run's W x wall, in that unit (0.1 s)
"""

from django import template

from leaderboard.scoring import costs

register = template.Library()


@register.filter
def device_unit(device: str) -> str:
    return costs.SHORT_UNIT[costs.unit(device)]


@register.filter
def device_seconds(run) -> str:
    return f"{(run.wall_ms or 0) * (run.world_size or 0) / 1000:.1f}"
