"""The module a feedback worker names on the dramatiq command line: the actor, the feedback queues of every hardware
profile, and the feedback reaper thread (expired leases re-queued, lost messages re-sent).

    dramatiq leaderboard.jobs.actors leaderboard.feedback.worker --queues gpu-h200x8 feedback-gpu-h200x8 \
        --processes 1 --threads 1
"""

from __future__ import annotations

import logging

import dramatiq

from leaderboard.feedback import actors  # noqa: F401  (declares the actor)
from leaderboard.jobs import worker_boot as bootstrap  # Django, the broker's middleware: one bootstrap for every worker

log = logging.getLogger("leaderboard.feedback")


def feedback_reaper():
    """The jobs' reaper thread, passing over feedback runs (expired leases re-queued, lost messages re-sent)."""
    from leaderboard.feedback import services
    from leaderboard.jobs.runner import Reaper

    return Reaper(reap=lambda: services.runs_reap(), name="pkb-feedback-reaper", logger=log, what="feedback reaper")


def declare_feedback_queues(broker=None) -> list[str]:
    from leaderboard.catalogue.models import HardwareProfile
    from leaderboard.feedback.models import queue_for

    broker = broker or dramatiq.get_broker()
    try:
        names = [queue_for(slug) for slug in HardwareProfile.objects.values_list("slug", flat=True)]
    except Exception:  # noqa: BLE001 - no database yet, none reachable, or none allowed here (a test's guard)
        log.warning("could not read hardware profiles; no feedback queue declared")
        names = []
    for name in names:
        broker.declare_queue(name)
    return names


# A feedback-only worker runs strangers' code as much as the jobs' one: the same gate (once), then this reaper.
bootstrap.boot("feedback", reaper=feedback_reaper, declare=declare_feedback_queues)
