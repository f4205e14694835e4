"""Quotas: daily (rolling 24 h), total and concurrent evaluations, reserved under a row lock, refunded for
platform failures, with the next free slot named."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from leaderboard.accounts import services as accounts_services
from leaderboard.accounts.models import QuotaCharge
from leaderboard.submissions import services as submissions_services
from leaderboard.submissions.models import Submission
from tests.site.conftest import GOOD_1, GOOD_13, meta


def limit(user, **values):
    for key, value in values.items():
        setattr(user.submitter, f"quota_{key}", value)
    user.submitter.save()


def test_concurrent_limit(owner, submit):
    limit(owner, concurrent=2)
    submit(owner, {"1_allreduce_torch.py": GOOD_1, "13_gemm_allreduce_torch.py": GOOD_13})
    with pytest.raises(accounts_services.QuotaExceeded, match="queued or running") as caught:
        submit(owner)
    assert "when 1 of them finish" in caught.value.message
    assert Submission.objects.count() == 1


def test_daily_limit_names_the_next_free_slot(owner, submit):
    limit(owner, daily=2)
    first = submit(owner)
    QuotaCharge.objects.filter(job__submission=first).update(created_at=timezone.now() - timedelta(hours=20))
    submit(owner)
    with pytest.raises(accounts_services.QuotaExceeded) as caught:
        submit(owner)
    expected = QuotaCharge.objects.order_by("created_at").first().created_at + timedelta(days=1)
    assert caught.value.next_free_at == expected
    assert "next free slot" in caught.value.message


def test_daily_window_rolls(owner, submit):
    limit(owner, daily=1)
    first = submit(owner)
    QuotaCharge.objects.filter(job__submission=first).update(created_at=timezone.now() - timedelta(hours=25))
    submit(owner)  # the old charge left the window


def test_total_limit(owner, submit):
    limit(owner, total=1)
    submit(owner)
    with pytest.raises(accounts_services.QuotaExceeded, match="in total"):
        submit(owner)


def test_refund_frees_the_slot(owner, submit):
    limit(owner, total=1, concurrent=5)
    submission = submit(owner)
    job = submission.jobs.get()
    accounts_services.quota_refund(job)
    submit(owner)


def test_quota_is_per_user(owner, outsider, submit):
    limit(owner, total=1)
    submit(owner)
    submit(outsider)


@pytest.mark.django_db(transaction=True)
def test_parallel_uploads_cannot_both_pass_the_check(owner, cpu):
    """Two uploads race for the last slot: the row lock serialises them, exactly one wins (real PostgreSQL)."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    limit(owner, total=1)
    barrier = threading.Barrier(2)
    outcomes = []

    def upload():
        barrier.wait()
        try:
            submissions_services.submission_create(owner.submitter, meta(), [("1_allreduce_torch.py", GOOD_1)])
            outcomes.append("ok")
        except accounts_services.QuotaExceeded:
            outcomes.append("quota")
        finally:
            connection.close()

    threads = [threading.Thread(target=upload) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["ok", "quota"]
    assert QuotaCharge.objects.count() == 1
