"""The module a feedback worker names on the dramatiq command line: the actor, the feedback queues of every hardware
profile, and the feedback reaper thread (expired leases re-queued, lost messages re-sent).

    dramatiq leaderboard.jobs.actors leaderboard.feedback.worker --queues gpu-h200x8 feedback-gpu-h200x8 \
        --processes 1 --threads 1
"""
from __future__ import annotations

import logging

from leaderboard.feedback import actors  # noqa: F401  (sets Django up when needed, declares the actor)

import dramatiq  # noqa: E402
from dramatiq.middleware import Middleware  # noqa: E402

log = logging.getLogger("leaderboard.feedback")


def feedback_reaper():
    """The jobs' reaper thread, passing over feedback runs (expired leases re-queued, lost messages re-sent)."""
    from leaderboard.feedback import services
    from leaderboard.jobs.runner import Reaper

    return Reaper(reap=lambda: services.runs_reap(), name="pkb-feedback-reaper", logger=log, what="feedback reaper")


class FeedbackReaperMiddleware(Middleware):
    def __init__(self):
        self.reaper = None

    def before_worker_boot(self, broker, worker):
        # A feedback-only worker runs strangers' code as much as the jobs' one: the same gate, once, at start.
        from leaderboard.jobs.sandbox_gate import check_sandbox

        check_sandbox(worker.consumer_whitelist or broker.get_declared_queues())

    def after_worker_boot(self, broker, worker):
        self.reaper = feedback_reaper()
        self.reaper.start()

    def before_worker_shutdown(self, broker, worker):
        if self.reaper is not None:
            self.reaper.stop()


def declare_feedback_queues(broker=None) -> list[str]:
    from leaderboard.feedback.models import queue_for
    from leaderboard.catalogue.models import HardwareProfile

    broker = broker or dramatiq.get_broker()
    try:
        names = [queue_for(slug) for slug in HardwareProfile.objects.values_list("slug", flat=True)]
    except Exception:  # no database yet
        log.warning("could not read hardware profiles; no feedback queue declared")
        names = []
    for name in names:
        broker.declare_queue(name)
    return names


_broker = dramatiq.get_broker()
if not any(isinstance(m, FeedbackReaperMiddleware) for m in _broker.middleware):
    _broker.add_middleware(FeedbackReaperMiddleware())
declare_feedback_queues(_broker)
