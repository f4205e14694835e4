"""The feedback actor: one message per feedback or profile run, on the profile's own feedback queue.

    dramatiq leaderboard.actors leaderboard.feedback.worker --queues gpu-h200x8 feedback-gpu-h200x8

The message carries only the run id; the runner claims the FeedbackRun row by compare-and-swap, so duplicate or stale
messages are harmless (the same rules as leaderboard jobs). ``leaderboard.feedback.worker`` is the module to name on
the dramatiq command line: it also starts the feedback reaper beside the worker.
"""
from __future__ import annotations

import logging
import os

import django
from django.apps import apps

if not apps.apps_ready:  # imported by the dramatiq CLI: set Django up (this also configures the broker)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
    django.setup()

import dramatiq  # noqa: E402
from dramatiq.message import Message  # noqa: E402

log = logging.getLogger("leaderboard.feedback")
ACTOR_NAME = "feedback_run"


@dramatiq.actor(actor_name=ACTOR_NAME, queue_name="feedback-default")
def feedback_run(run_id: int) -> None:
    from leaderboard.feedback.runner import run_feedback

    outcome = run_feedback(int(run_id))
    log.info("feedback run %s: %s", run_id, outcome)


def send(run_id: int, queue_name: str) -> None:
    """Wake a feedback worker: the message carries only the run id, the database row is the truth."""
    broker = dramatiq.get_broker()
    if queue_name not in broker.get_declared_queues():
        broker.declare_queue(queue_name)
    broker.enqueue(Message(queue_name=queue_name, actor_name=ACTOR_NAME, args=(run_id,), kwargs={}, options={}))
