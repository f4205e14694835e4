"""Fixtures of the feedback tests: the site's (named users, catalogue, profiles, uploads) plus feedback sessions,
tokens, fake judge documents for metering, and a real dramatiq worker thread on the feedback queue."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.site.conftest import (  # noqa: F401  (fixtures re-exported for this directory)
    GOOD_1,
    WRONG_1,
    catalogue,
    cpu,
    finish,
    gpu,
    meta,
    outsider,
    owner,
    small_registry,
    staff,
    submit,
)

CANDIDATES = Path(__file__).parent / "candidates"


def source(name: str) -> str:
    return (CANDIDATES / name).read_text()


@pytest.fixture
def quick(cpu):  # noqa: F811 - the fixture imported above, requested by name
    """The CPU profile with two trials (feedback runs use the profile's trial count)."""
    cpu.trials = 2
    cpu.save()
    return cpu


@pytest.fixture
def session(owner, cpu):  # noqa: F811 - the fixtures imported above, requested by name
    from leaderboard.feedback import services

    return services.session_open(owner.submitter, "cpu-gloo", "test session")


@pytest.fixture
def token(owner, cpu):  # noqa: F811 - the fixtures imported above, requested by name
    from leaderboard.accounts import services as accounts_services

    return accounts_services.token_create(owner.submitter, "agent", ["read", "submit"])[1]


def fake_document(verdict="correct", wall_s=2.5, **extra) -> dict:
    """A judge-shaped document for metering and storage tests (tests that judge code run the real judge)."""
    timing = None
    if verdict == "correct":
        timing = {
            "reference_ms": 1.2,
            "candidate_ms": 1.0,
            "speedup": 1.2,
            "speedup_ci": [1.1, 1.3],
            "faster": True,
            "ranked": False,
            "method": "wall_clock",
            "samples": 10,
            "blocks": 4,
            "speed_of_light": {"applies": False, "reason": "no peak rates"},
        }
    document = {
        "schema": 1,
        "verdict": verdict,
        "message": f"{verdict} (test document)",
        "flags": [],
        "trials": [],
        "timing": timing,
        "environment": {"backend": "gloo"},
        "logs": [],
        "wall_s": wall_s,
    }
    document.update(extra)
    return document


@pytest.fixture
def complete():
    """complete(run, document): claim the run as a worker would and store the document."""
    from leaderboard.feedback import services

    def run_it(run, document):
        assert services.run_claim(run.pk, "test-worker") is not None
        return services.run_finish(run.pk, "test-worker", document)

    return run_it


@pytest.fixture
def feedback_worker(transactional_db):
    """dramatiq's own Worker (one thread) consuming feedback-cpu-gloo on the test broker: the production path."""
    import dramatiq

    from leaderboard.feedback import actors

    broker = dramatiq.get_broker()
    if actors.ACTOR_NAME not in broker.actors:
        broker.declare_actor(actors.feedback_run)
    broker.declare_queue("feedback-cpu-gloo")
    worker = dramatiq.Worker(broker, queues={"feedback-cpu-gloo"}, worker_threads=1, worker_timeout=100)
    worker.start()
    yield worker
    worker.stop(timeout=60_000)


def wait_finished(run_id: int, timeout: float = 240.0):
    from leaderboard.feedback.models import FeedbackRun

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = FeedbackRun.objects.get(pk=run_id)
        if run.status in ("done", "failed"):
            return run
        time.sleep(0.5)
    raise AssertionError(f"feedback run {run_id} did not finish in {timeout} s (status {run.status})")


# Every API response of these tests is checked against the served schema (autouse, session-wide).
from tests.site.api.schema_check import api_responses_match_the_schema  # noqa: E402,F401
