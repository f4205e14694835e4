"""Model behaviour: who sees what, constraints that keep the job table honest."""

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import IntegrityError, transaction

from leaderboard.accounts import services as accounts_services
from leaderboard.jobs.models import EvaluationJob
from leaderboard.submissions import services as submissions_services
from leaderboard.submissions.models import Candidate


def test_private_submission_is_the_owners(owner, outsider, staff, submit):
    submission = submit(owner)
    assert submission.visible_to(owner) and submission.code_visible_to(owner)
    assert submission.visible_to(staff)
    assert not submission.visible_to(outsider) and not submission.visible_to(AnonymousUser())


def test_published_submission_is_everyones(owner, outsider, submit):
    submission = submit(owner)
    submissions_services.submission_publish(submission, owner)
    submission.refresh_from_db()
    assert submission.visible_to(AnonymousUser()) and submission.code_visible_to(outsider)


def test_hidden_submission_cannot_be_republished_by_its_owner(owner, submit):
    submission = submit(owner)
    submissions_services.submission_set_visibility(submission, "hidden")
    with pytest.raises(accounts_services.NotAllowed):
        submissions_services.submission_publish(submission, owner)


def test_one_candidate_per_problem_and_attempt(owner, submit):
    submission = submit(owner)
    c = submission.candidates.get()
    with pytest.raises(IntegrityError), transaction.atomic():
        Candidate.objects.create(
            submission=submission, problem_id=1, attempt=1, filename="x", backend="b", code="", sha256="", size=0
        )
    assert c.attempt == 1


def test_one_job_per_candidate_and_profile(owner, submit):
    job = submit(owner).jobs.get()
    with pytest.raises(IntegrityError), transaction.atomic():
        EvaluationJob.objects.create(
            candidate=job.candidate, profile=job.profile, submission=job.submission, submitter=job.submitter
        )


def test_submitter_limits_default_to_settings(owner, settings):
    settings.PKB_QUOTA_DAILY = 5
    assert owner.submitter.limits()["daily"] == 5
    owner.submitter.quota_daily = 9
    assert owner.submitter.limits()["daily"] == 9
