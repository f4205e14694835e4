"""The feedback actor: one message per feedback or profile run, on the profile's own feedback queue.

    dramatiq leaderboard.jobs.actors leaderboard.feedback.worker --queues gpu-h200x8 feedback-gpu-h200x8

The message carries only the run id; the runner claims the FeedbackRun row by compare-and-swap, so duplicate or stale
messages are harmless (the same rules as leaderboard jobs). ``leaderboard.feedback.worker`` is the module to name on
the dramatiq command line: it also starts the feedback reaper beside the worker.
"""

from __future__ import annotations

import logging

import dramatiq

from leaderboard.jobs import worker_boot as bootstrap  # noqa: F401  (sets Django up when the dramatiq CLI imports this first)
from leaderboard.jobs.broker import FEEDBACK_ACTOR_NAME as ACTOR_NAME

log = logging.getLogger("leaderboard.feedback")


@dramatiq.actor(actor_name=ACTOR_NAME, queue_name="feedback-default")
def feedback_run(run_id: int) -> None:
    from leaderboard.feedback.runner import run_feedback

    outcome = run_feedback(int(run_id))
    log.info("feedback run %s: %s", run_id, outcome)
