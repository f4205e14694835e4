"""Template hooks of the feedback app on the site's pages (each a fixed number of queries, whatever the rows).

{% load feedback_tags %}
{% feedback_costs section.entries as fcosts %}        leaderboard: measured cost of the agentic rows (1 query)
{% include "feedback/cost_cell.html" with fc=fcosts|fb_get:s.pk %}
{% feedback_submission_cost submission as fc %}       submission page: its linked sessions' cost (1 query)
{% feedback_owner_panel submission %}                 submission page: profile button, runs, session link
"""

from __future__ import annotations

from django import template

from leaderboard.feedback import selectors, services
from leaderboard.feedback.models import FeedbackRun

register = template.Library()


@register.simple_tag
def feedback_costs(entries) -> dict:
    ids = [e.submission_id for e in entries if e.protocol == services.AGENTIC]
    return services.measured_cost(ids) if ids else {}


@register.filter
def fb_get(mapping, key):
    return mapping.get(key) if hasattr(mapping, "get") else None


@register.simple_tag
def feedback_submission_cost(submission):
    """The measured cost of an agentic submission's linked sessions, or None (none linked, or not agentic)."""
    if submission.protocol != services.AGENTIC:
        return None
    return services.measured_cost([submission.pk]).get(submission.pk)


@register.inclusion_tag("feedback/owner_panel.html", takes_context=True)
def feedback_owner_panel(context, submission) -> dict:
    candidates = list(
        submission.candidates.select_related("problem")
        .filter(problem__implemented=True)
        .only("id", "submission_id", "filename", "attempt", "problem__id", "problem__stem", "problem__implemented")
    )
    return {
        "submission": submission,
        "candidates": candidates,
        "runs": selectors.profile_runs_of(submission),
        "csrf_token": context.get("csrf_token"),
        "agentic": submission.protocol == services.AGENTIC,
        "queue": f"feedback-{submission.profile.slug}",
        "PROFILE": FeedbackRun.PROFILE,
    }


@register.filter
def hours(ms) -> str:
    value = (ms or 0) / 3.6e6
    return f"{value:.3g}" if value else "0"


@register.filter
def seconds(ms) -> str:
    return f"{(ms or 0) / 1000:.1f}"
