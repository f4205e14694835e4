"""Staff tools in the admin: flag, hide, re-run, verify; results stay read-only."""

import pytest

from leaderboard.jobs.models import EvaluationJob, Result
from leaderboard.scoring.models import LeaderboardEntry
from leaderboard.submissions.models import Submission
from tests.site.conftest import judge_document


@pytest.fixture
def judged(owner, submit, finish, gpu):
    submission = submit(owner, profile="gpu-h200x8")
    finish(submission.jobs.get(), judge_document())
    from leaderboard.submissions import services as submissions_services

    submissions_services.submission_publish(submission, owner)
    return submission


def action(client, name, submission):
    return client.post("/admin/submissions/submission/", {"action": name, "_selected_action": [submission.pk]})


def test_staff_flag_hide_verify_rerun(client, staff, gpu, judged):
    client.force_login(staff)
    action(client, "flag", judged)
    entry = LeaderboardEntry.objects.get(submission=judged)
    assert not entry.ranked and Submission.objects.get(pk=judged.pk).flagged
    action(client, "unflag", judged)
    assert LeaderboardEntry.objects.get(submission=judged).ranked
    action(client, "mark_verified", judged)
    assert Submission.objects.get(pk=judged.pk).verified
    action(client, "rerun", judged)
    assert EvaluationJob.objects.get(submission=judged).run == 2
    action(client, "hide", judged)
    assert not LeaderboardEntry.objects.get(submission=judged).listed
    assert client.get(judged.get_absolute_url()).status_code == 200  # staff still see it
    client.logout()
    assert client.get(judged.get_absolute_url()).status_code == 404


def test_results_are_read_only_in_the_admin(client, staff, gpu, judged):
    client.force_login(staff)
    result = Result.objects.get()
    assert client.get(f"/admin/jobs/result/{result.pk}/change/").status_code == 200
    response = client.post(f"/admin/jobs/result/{result.pk}/change/", {"verdict": "incorrect"})
    assert response.status_code == 403
    assert Result.objects.get().verdict == "correct"


def test_outsiders_cannot_use_the_admin(client, outsider, judged):
    client.force_login(outsider)
    assert client.get("/admin/submissions/submission/").status_code == 302
