"""A staff audit names a problem the submission attempted, or none: anything else is a form error naming the valid
problems (never HTTP 500, never recorded), from the page, the admin and the service alike."""

import pytest

from leaderboard.scoring import services as scoring_services
from leaderboard.scoring.models import Audit
from tests.site.conftest import judge_document


@pytest.fixture
def judged(owner, submit, finish, gpu):
    submission = submit(owner, profile="gpu-h200x8")  # one candidate: problem 1 (1_allreduce)
    finish(submission.jobs.get(), judge_document())
    return submission


@pytest.mark.parametrize(
    "problem, why", [("9999", "problem 9999 does not exist"), ("13", "no candidate for problem 13")]
)
def test_the_page_refuses_a_problem_not_attempted_naming_the_valid_ones(judged, staff, client, problem, why):
    client.force_login(staff)
    response = client.post(
        f"/submissions/{judged.pk}/audit", {"problem": problem, "verdict": "clean", "note": "x"}, follow=True
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert why in page and "1 (1_allreduce)" in page
    assert not Audit.objects.exists()


def test_the_service_refuses_it_too(judged, staff):
    with pytest.raises(scoring_services.AuditRefused, match=r"no candidate for problem 13.*1 \(1_allreduce\)"):
        scoring_services.audit_record(judged, 13, Audit.CLEAN, "x", staff)
    assert scoring_services.audit_record(judged, 1, Audit.CLEAN, "fine", staff).problem_id == 1


def test_the_admin_refuses_it_as_a_form_error(judged, staff, client):
    client.force_login(staff)
    response = client.post(
        "/admin/scoring/audit/add/", {"submission": judged.pk, "problem": 13, "verdict": "clean", "note": "x"}
    )
    assert response.status_code == 200 and "no candidate for problem 13" in response.content.decode()
    assert not Audit.objects.exists()
