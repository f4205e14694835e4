"""The feedback quota: its own (separate from the leaderboard's evaluations), reserved under the submitter's row lock
in the transaction that inserts the run, so parallel requests cannot overshoot it (threads against real
PostgreSQL); refunded when the platform fails a run."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard.accounts import services as accounts_services
from leaderboard.accounts.models import QuotaCharge
from leaderboard.feedback import services
from leaderboard.feedback.models import FeedbackQuota, FeedbackRun, FeedbackSession
from tests.feedback.conftest import fake_document, source

CODE = source("good_1.py")


def limit(user, **values):
    FeedbackQuota.objects.update_or_create(submitter=user.submitter, defaults=values)


def race(count, target):
    barrier = threading.Barrier(count)
    outcomes = []

    def one():
        barrier.wait()
        try:
            target()
            outcomes.append("ok")
        except accounts_services.QuotaExceeded:
            outcomes.append("quota")
        finally:
            connection.close()

    threads = [threading.Thread(target=one) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


@pytest.mark.django_db(transaction=True)
def test_parallel_requests_cannot_overshoot_the_concurrent_limit(owner, cpu):
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    limit(owner, concurrent=2)
    session = services.session_open(owner.submitter, "cpu-gloo")
    outcomes = race(8, lambda: services.run_create(owner.submitter, session.pk, "1", CODE))
    assert sorted(outcomes) == ["ok"] * 2 + ["quota"] * 6
    assert FeedbackRun.objects.filter(status="queued").count() == 2


@pytest.mark.django_db(transaction=True)
def test_parallel_requests_cannot_overshoot_the_daily_limit_through_the_api(owner, cpu, token):
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    limit(owner, daily=3, concurrent=100)
    session = services.session_open(owner.submitter, "cpu-gloo")
    statuses = []

    def post():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        response = client.post(
            "/api/v1/feedback/", {"session": session.pk, "problem": "1", "code": CODE}, format="json"
        )
        statuses.append(response.status_code)
        if response.status_code == 429:
            raise accounts_services.QuotaExceeded("refused")

    outcomes = race(6, post)
    assert sorted(statuses) == [202] * 3 + [429] * 3 and outcomes.count("ok") == 3
    assert FeedbackRun.objects.count() == 3


def test_daily_limit_names_the_next_free_slot_and_rolls(owner, session):
    limit(owner, daily=2, concurrent=10)
    first = services.run_create(owner.submitter, session.pk, "1", CODE)
    FeedbackRun.objects.filter(pk=first.pk).update(created_at=timezone.now() - timedelta(hours=20))
    services.run_create(owner.submitter, session.pk, "1", CODE)
    with pytest.raises(services.FeedbackQuotaExceeded, match="next free slot") as caught:
        services.run_create(owner.submitter, session.pk, "1", CODE)
    assert caught.value.next_free_at == FeedbackRun.objects.get(pk=first.pk).created_at + timedelta(days=1)
    FeedbackRun.objects.filter(pk=first.pk).update(created_at=timezone.now() - timedelta(hours=25))
    services.run_create(owner.submitter, session.pk, "1", CODE)  # the old run left the window


def test_refund_on_platform_failure_frees_the_slot(owner, session):
    limit(owner, daily=1, concurrent=10)
    run = services.run_create(owner.submitter, session.pk, "1", CODE)
    for _ in range(run.max_attempts):
        services.run_claim(run.pk, "w")
        services.run_infra_error(run.pk, "w", "lost")
    run.refresh_from_db()
    assert run.status == "failed" and run.refunded_at is not None
    services.run_create(owner.submitter, session.pk, "1", CODE)


def test_feedback_quota_is_separate_from_the_leaderboards(owner, session, submit, complete):
    owner.submitter.quota_total = 1
    owner.submitter.save()
    submit(owner)  # the last leaderboard evaluation
    with pytest.raises(accounts_services.QuotaExceeded):
        submit(owner)
    run = services.run_create(owner.submitter, session.pk, "1", CODE)  # feedback still has room
    complete(run, fake_document())
    assert QuotaCharge.objects.count() == 1  # and took nothing from the leaderboard's quota


def test_quota_refusal_on_the_api_is_429(owner, session, token):
    limit(owner, concurrent=1)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    body = {"session": session.pk, "problem": "1", "code": CODE}
    assert client.post("/api/v1/feedback/", body, format="json").status_code == 202
    refused = client.post("/api/v1/feedback/", body, format="json")
    assert refused.status_code == 429 and "at most 1 at once" in refused.json()["detail"]
    assert FeedbackSession.objects.get().runs.count() == 1
