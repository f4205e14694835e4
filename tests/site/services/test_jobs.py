"""The job lifecycle in services: compare-and-swap claims, heartbeats, idempotent results, infra retries and
refunds, the reaper, re-runs."""

from datetime import timedelta

import pytest
from django.utils import timezone

from leaderboard.accounts import services as accounts_services
from leaderboard.accounts.models import QuotaCharge
from leaderboard.jobs import services as jobs_services
from leaderboard.jobs.models import EvaluationJob, Result
from leaderboard.submissions import services as submissions_services
from tests.site.conftest import judge_document


@pytest.fixture
def job(owner, submit):
    return submit(owner).jobs.get()


def test_claim_is_compare_and_swap(job):
    assert jobs_services.job_claim(job.pk, "w1") is not None
    assert jobs_services.job_claim(job.pk, "w2") is None
    job.refresh_from_db()
    assert (job.status, job.lease_owner, job.attempts) == ("running", "w1", 1)


def test_heartbeat_extends_only_the_owners_lease(job, settings):
    jobs_services.job_claim(job.pk, "w1")
    EvaluationJob.objects.filter(pk=job.pk).update(lease_expires_at=timezone.now() + timedelta(seconds=1))
    assert jobs_services.job_heartbeat(job.pk, "w1")
    job.refresh_from_db()
    assert job.lease_expires_at > timezone.now() + timedelta(seconds=settings.PKB_LEASE_SECONDS - 5)
    assert not jobs_services.job_heartbeat(job.pk, "w2")


def test_finish_stores_one_result_and_scores(job):
    jobs_services.job_claim(job.pk, "w1")
    result = jobs_services.job_finish(job.pk, "w1", judge_document())
    job.refresh_from_db()
    assert job.status == "done" and result.verdict == "correct" and result.speedup == 1.3
    assert job.submission.entry.correct == 1 and job.submission.entry.faster == 1
    assert job.submission.entry.pending == 0


def test_result_from_a_worker_without_the_lease_is_dropped(job):
    jobs_services.job_claim(job.pk, "w1")
    assert jobs_services.job_finish(job.pk, "w2", judge_document()) is None
    assert jobs_services.job_finish(job.pk, "w1", judge_document()) is not None
    assert jobs_services.job_finish(job.pk, "w1", judge_document(verdict="incorrect")) is None  # already done
    assert Result.objects.filter(job=job).count() == 1


def test_results_are_append_only(job, finish):
    result = finish(job, judge_document())
    with pytest.raises(TypeError):
        result.save()
    with pytest.raises(TypeError):
        Result.objects.filter(pk=result.pk).update(verdict="incorrect")


def test_at_most_one_final_result_per_run_even_if_written_twice(job):
    from django.db import IntegrityError, transaction

    jobs_services.job_claim(job.pk, "w1")
    jobs_services.job_finish(job.pk, "w1", judge_document())
    with pytest.raises(IntegrityError), transaction.atomic():
        Result.objects.create(job=job, run=job.run, verdict="incorrect", document={})


def test_infra_error_is_retried_then_failed_and_refunded(job, django_capture_on_commit_callbacks):
    for attempt in range(1, job.max_attempts + 1):
        assert jobs_services.job_claim(job.pk, f"w{attempt}") is not None
        with django_capture_on_commit_callbacks(execute=True):
            jobs_services.job_infra_error(job.pk, f"w{attempt}", "judge exited with status 3")
        job.refresh_from_db()
        expected = "queued" if attempt < job.max_attempts else "failed"
        assert job.status == expected
    assert jobs_services.job_claim(job.pk, "late") is None
    assert Result.objects.filter(job=job, verdict="infra_error").count() == job.max_attempts
    assert QuotaCharge.objects.get(job=job).refunded_at is not None
    score = job.submission.scores.get(problem_id=1)
    assert score.status == "infra_error" and not score.correct
    assert job.submission.entry.pending == 0


def test_reaper_requeues_an_expired_lease(job, django_capture_on_commit_callbacks):
    jobs_services.job_claim(job.pk, "dead-worker")
    EvaluationJob.objects.filter(pk=job.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        counts = jobs_services.jobs_reap(broker_depth=lambda q: 10)
    assert counts["requeued"] == 1 and len(callbacks) == 1
    job.refresh_from_db()
    assert job.status == "queued" and job.lease_owner == ""
    lost = Result.objects.get(job=job)
    assert lost.verdict == "infra_error" and "dead-worker" in lost.message
    assert jobs_services.job_claim(job.pk, "w2") is not None


def test_reaper_leaves_live_leases_alone(job):
    jobs_services.job_claim(job.pk, "w1")
    assert jobs_services.jobs_reap(broker_depth=lambda q: 10) == {"requeued": 0, "failed": 0, "resent": 0}


def test_reaper_fails_a_job_whose_attempts_are_spent(job):
    EvaluationJob.objects.filter(pk=job.pk).update(max_attempts=1)
    jobs_services.job_claim(job.pk, "w1")
    EvaluationJob.objects.filter(pk=job.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert jobs_services.jobs_reap(broker_depth=lambda q: 10)["failed"] == 1
    job.refresh_from_db()
    assert job.status == "failed" and QuotaCharge.objects.get(job=job).refunded_at is not None


def test_reaper_resends_messages_the_broker_lost(job, settings):
    settings.PKB_REQUEUE_QUEUED_AFTER_SECONDS = 60
    EvaluationJob.objects.filter(pk=job.pk).update(enqueued_at=timezone.now() - timedelta(minutes=5))
    sent = []
    original = jobs_services.LEASE.send_quietly
    jobs_services.LEASE.send_quietly = lambda job_id, queue: sent.append((job_id, queue))
    try:
        assert jobs_services.jobs_reap(broker_depth=lambda q: 1)["resent"] == 0  # the broker still holds a message
        assert jobs_services.jobs_reap(broker_depth=lambda q: 0)["resent"] == 1
        assert jobs_services.jobs_reap(broker_depth=lambda q: 0)["resent"] == 0  # not stale any more
    finally:
        jobs_services.LEASE.send_quietly = original
    assert sent == [(job.pk, "cpu-gloo")]


def test_owner_rerun_is_a_new_run_and_is_charged(job, finish, owner):
    finish(job, judge_document(verdict="incorrect"))
    assert submissions_services.submission_rerun(job.submission, owner) == 1
    job.refresh_from_db()
    assert (job.status, job.run, job.attempts) == ("queued", 2, 0)
    assert QuotaCharge.objects.filter(job=job).count() == 2
    finish(job, judge_document())
    assert job.submission.entry.correct == 1  # the current run's result counts
    assert Result.objects.filter(job=job).count() == 2  # history kept


def test_staff_rerun_is_free_and_outsiders_cannot(job, finish, staff, outsider):
    finish(job, judge_document())
    with pytest.raises(accounts_services.NotAllowed):
        submissions_services.submission_rerun(job.submission, outsider)
    submissions_services.submission_rerun(job.submission, staff)
    assert QuotaCharge.objects.filter(job=job).count() == 1


def test_rerun_of_failed_jobs_only(owner, submit, finish):
    from tests.site.conftest import GOOD_1, GOOD_13

    submission = submit(owner, {"1_allreduce_torch.py": GOOD_1, "13_gemm_allreduce_torch.py": GOOD_13})
    first, second = submission.jobs.order_by("id")
    finish(first, judge_document())
    EvaluationJob.objects.filter(pk=second.pk).update(status="failed")
    assert submissions_services.submission_rerun(submission, owner, only_failed=True) == 1
    second.refresh_from_db()
    assert second.status == "queued"
