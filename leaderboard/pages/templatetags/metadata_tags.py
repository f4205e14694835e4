"""The submission page's record of metadata corrections (leaderboard/submissions/metadata.py).

{% load metadata_tags %}
{% metadata_history submission %}     every correction, oldest first (nothing when there is none)
"""

from django import template

from leaderboard.submissions import metadata

register = template.Library()

LABELS = {
    "model_name": "model",
    "agent": "agent",
    "agent_version": "agent version",
    "label": "label",
    "notes": "notes",
    "reported_tokens": "tokens (self-reported)",
    "reported_dollars": "dollars (self-reported)",
}


@register.filter
def field_label(field: str) -> str:
    return LABELS.get(field, field.replace("_", " "))


@register.inclusion_tag("leaderboard/metadata_history.html")
def metadata_history(submission):
    return {"history": metadata.history(submission)}
