"""Layers of the site that other tests only passed through (issue 45, item 9), each pinned by a test that fails when
that one layer is removed: peak fraction never enters Faster, and the audit service refuses a non-staff auditor by
itself, whatever page or admin form calls it. (The production log-in threshold: test_lockout_proxy.py.)"""

from __future__ import annotations

import pytest

from leaderboard.scoring import services as scoring_services
from leaderboard.scoring.models import Audit, LeaderboardEntry, ProblemScore
from tests.site.conftest import judge_document


def near_peak_but_not_faster():
    """A correct result the judge did not find faster (its interval straddles 1) that runs at 95% of the device's
    peak: the shape of a kernel as good as the reference, both near the speed of light."""
    document = judge_document(speedup=0.98, lo=0.9, hi=1.05, faster=False)
    document["timing"]["peak_fraction"] = {
        "applies": True,
        "value": 0.95,
        "ci": [0.9, 0.99],
        "floor_ms": 0.95,
        "candidate_ms": 1.0,
        "bound": "interconnect",
        "ceilings": "H200",
    }
    return document


@pytest.fixture
def judged(owner, submit, finish, gpu):
    """A submission on the ranked GPU profile whose one file's job ended with ``document``, stored through the
    job service (the scores and the leaderboard row refreshed by its signal, as a worker's result is)."""

    def make(document):
        submission = submit(owner, profile="gpu-h200x8")
        finish(submission.jobs.get(), document)
        return submission

    return make


def test_a_correct_result_near_peak_that_is_not_faster_counts_faster_zero(judged):
    submission = judged(near_peak_but_not_faster())
    score = ProblemScore.objects.get(submission=submission, problem_id=1)
    assert score.peak_fraction == pytest.approx(0.95)  # the peak was read and stored...
    assert score.correct and not (score.faster or score.faster_1_5 or score.faster_2_0)  # ...and decided nothing
    entry = LeaderboardEntry.objects.get(submission=submission)
    assert entry.geomean_peak_fraction == pytest.approx(0.95) and entry.peak_problems == 1
    assert (entry.correct, entry.faster) == (1, 0)
    assert (entry.fast_1_0, entry.fast_1_5, entry.fast_2_0) == (0, 0, 0)


def test_the_audit_service_refuses_a_non_staff_auditor_by_itself(judged, owner, staff, django_user_model):
    submission = judged(judge_document())
    # A superuser bit without staff is not staff: the service reads is_staff, as the admin does.
    not_staff = django_user_model.objects.create_user(username="eve", password="pw-eve", is_superuser=True)
    for auditor in (owner, not_staff, None):
        with pytest.raises(PermissionError):
            scoring_services.audit_record(submission, 1, Audit.REWARD_HACK, "not mine to say", auditor)
        with pytest.raises(PermissionError):
            scoring_services.audit_record(submission, None, Audit.REWARD_HACK, "not mine to say", auditor)
    assert not Audit.objects.filter(submission=submission).exists()
    score = ProblemScore.objects.get(submission=submission, problem_id=1)
    assert score.correct and not score.flagged and score.audit == ""
    # The same call by staff is recorded: the refusal above is the auditor's, not a broken call.
    scoring_services.audit_record(submission, 1, Audit.REWARD_HACK, "reads the reference's output", staff)
    score.refresh_from_db()
    assert score.audit == Audit.REWARD_HACK and score.flagged and not score.correct
