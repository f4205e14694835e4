"""Broker plumbing: a middleware for prefetch 1 and the one function that sends a row's id to an actor's queue.

A GPU worker must hold at most one message: with dramatiq's default prefetch (2 x threads) a second job would sit
in a busy host's buffer while another host idles. ``dramatiq_queue_prefetch=1`` in the environment does the same;
this middleware makes it hold even when the variable is forgotten.
"""

from __future__ import annotations

import dramatiq
from dramatiq.message import Message
from dramatiq.middleware import Middleware

ACTOR_NAME = "evaluate_job"  # evaluation jobs (leaderboard/jobs/actors.py)
FEEDBACK_ACTOR_NAME = "feedback_run"  # feedback and profile runs (leaderboard/feedback/actors.py)
BUILD_ACTOR_NAME = "build_job"  # a job's build stage, before its judged run (leaderboard/jobs/build_stage.py)


class OneMessageAtATime(Middleware):
    def before_worker_boot(self, broker, worker):
        # Consumers are created after this hook (when the worker registers its own middleware), so they use it.
        worker.queue_prefetch = 1


def send(actor_name: str, row_id: int, queue_name: str) -> None:
    """Wake a worker on ``queue_name``: the message carries only the row's id, the database row is the truth. Sent by
    name, so the sender never imports the actor (nor the worker code behind it)."""
    broker = dramatiq.get_broker()
    if queue_name not in broker.get_declared_queues():
        broker.declare_queue(queue_name)
    broker.enqueue(Message(queue_name=queue_name, actor_name=actor_name, args=(row_id,), kwargs={}, options={}))


def queue_depth(queue_name: str) -> int | None:
    """Messages waiting in a queue (not counting ones a worker holds), or None when the broker cannot tell."""
    broker = dramatiq.get_broker()
    try:
        if hasattr(broker, "get_queue_message_counts"):  # RabbitMQ
            return int(broker.get_queue_message_counts(queue_name)[0])
        if hasattr(broker, "client") and hasattr(broker, "namespace"):  # Redis: the queue is a list of message ids
            return int(broker.client.llen(f"{broker.namespace}:{queue_name}"))
        queues = getattr(broker, "queues", None)  # StubBroker: in-process queue.Queue objects
        if isinstance(queues, dict):
            queue = queues.get(queue_name)
            return queue.qsize() if queue is not None else 0
    except Exception:  # noqa: BLE001 - each broker's client fails in its own way, and None is "cannot tell"
        return None
    return None
