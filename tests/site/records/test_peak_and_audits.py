"""Issue 35: peak fraction (stored, exported, shown, its own column) and staff audits (a badge wherever the result
appears, a reward hack out of ranking, listed by the API). The judge's side of peak fraction is
tests/evaluator/test_peak.py; here the site stores and shows what the judge wrote."""

from __future__ import annotations

import csv
import io
import math

import pytest

from leaderboard.scoring import services as scoring_services
from leaderboard.scoring.models import Audit, LeaderboardEntry, ProblemScore
from leaderboard.submissions import services as submissions_services
from tests.site.conftest import GOOD_1, GOOD_13, judge_document


def peak_document(value, lo, hi, **kwargs):
    """A judge document whose timing carries the peak-fraction record evaluator/timing/peak.py writes."""
    doc = judge_document(**kwargs)
    doc["timing"]["speed_of_light"] = {"applies": True, "floor_ms": value * 1.0, "ceilings": "H200"}
    doc["timing"]["peak_fraction"] = {
        "applies": True,
        "value": value,
        "ci": [lo, hi],
        "floor_ms": value * 1.0,
        "candidate_ms": 1.0,
        "bound": "interconnect",
        "ceilings": "H200",
    }
    return doc


def no_floor_document(reason="the catalogue's estimate holds at M=N=1024, bf16, W=8 only"):
    doc = judge_document()
    doc["timing"]["peak_fraction"] = {"applies": False, "reason": reason}
    return doc


@pytest.fixture
def two_problem_submission(owner, submit, gpu, finish):
    """A published submission on the ranked GPU profile: problem 1 at 20% of peak, problem 13 at 5%."""

    def make(first=None, second=None, **changes):
        submission = submit(
            owner,
            {"1_allreduce_torch.py": GOOD_1, "13_gemm_allreduce_torch.py": GOOD_13},
            profile="gpu-h200x8",
            **changes,
        )
        one, thirteen = submission.jobs.order_by("candidate__problem_id")
        finish(one, first or peak_document(0.2, 0.15, 0.25))
        finish(thirteen, second or peak_document(0.05, 0.04, 0.06))
        submissions_services.submission_publish(submission, owner)
        return submission

    return make


def test_peak_fraction_is_stored_per_score_and_its_geomean_per_submission(two_problem_submission):
    submission = two_problem_submission()
    one = ProblemScore.objects.get(submission=submission, problem_id=1)
    assert (one.peak_fraction, one.peak_fraction_lo, one.peak_fraction_hi) == (0.2, 0.15, 0.25)
    entry = LeaderboardEntry.objects.get(submission=submission)
    assert entry.geomean_peak_fraction == pytest.approx(math.sqrt(0.2 * 0.05)) and entry.peak_problems == 2
    # Its own column: Correct and Faster are what they would be without it.
    assert (entry.correct, entry.faster) == (2, 2)


def test_a_flagged_or_wrong_result_is_left_out_of_the_peak_geomean(two_problem_submission):
    flagged = peak_document(0.9, 0.8, 1.0, flags=("timing_crosscheck",))
    submission = two_problem_submission(second=flagged)
    entry = LeaderboardEntry.objects.get(submission=submission)
    assert entry.geomean_peak_fraction == pytest.approx(0.2) and entry.peak_problems == 1


def test_no_floor_gives_a_reason_not_a_number(two_problem_submission, client):
    submission = two_problem_submission(second=no_floor_document())
    score = ProblemScore.objects.get(submission=submission, problem_id=13)
    assert score.peak_fraction is None and "W=8 only" in score.peak_note
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "n/a" in page and "W=8 only" in page  # said, with the reason in the cell's title


def test_an_older_document_with_an_applying_floor_still_gives_the_fraction(two_problem_submission):
    doc = judge_document()
    doc["timing"]["speed_of_light"] = {"applies": True, "floor_ms": 0.25}  # candidate_ms 1.0 in judge_document
    submission = two_problem_submission(first=doc)
    score = ProblemScore.objects.get(submission=submission, problem_id=1)
    assert score.peak_fraction == pytest.approx(0.25) and score.peak_fraction_lo is None


def test_peak_fraction_on_the_pages_exports_and_api(two_problem_submission, client):
    submission = two_problem_submission()
    board = client.get("/leaderboard/gpu-h200x8/").content.decode()
    assert ">Peak fraction</th>" in board and "10%<span" in board  # the geomean of 20% and 5%
    rows = list(csv.DictReader(io.StringIO(client.get("/leaderboard/gpu-h200x8/?format=csv").content.decode())))
    assert float(rows[0]["geomean_peak_fraction"]) == pytest.approx(math.sqrt(0.01), abs=1e-5)
    assert rows[0]["peak_fraction_problems"] == "2"
    api = client.get("/api/v1/leaderboard/gpu-h200x8/").json()
    entry = api["sections"][0]["entries"][0]
    assert entry["geomean_peak_fraction"] == pytest.approx(0.1) and entry["peak_problems"] == 2
    detail = client.get(f"/api/v1/submissions/{submission.pk}/").json()
    assert {s["problem"]: s["peak_fraction"] for s in detail["scores"]} == {1: 0.2, 13: 0.05}
    sub_csv = list(
        csv.DictReader(io.StringIO(client.get(f"/submissions/{submission.pk}/?format=csv").content.decode()))
    )
    assert {r["stem"]: r["peak_fraction"] for r in sub_csv if r["peak_fraction"]} == {
        "1_allreduce": "0.2",
        "13_gemm_allreduce": "0.05",
    }
    problem = client.get("/problems/1_allreduce/?profile=gpu-h200x8").content.decode()
    assert "20%" in problem and "[15%, 25%]" in problem and 'id="peak-data"' in problem
    problem_json = client.get("/problems/1_allreduce/?profile=gpu-h200x8&format=json").json()
    assert problem_json["rows"][0]["peak_fraction"] == 0.2
    problems = list(
        csv.DictReader(io.StringIO(client.get("/problems/?profile=gpu-h200x8&format=csv").content.decode()))
    )
    assert {r["stem"]: r["best_peak_fraction"] for r in problems if r["best_peak_fraction"]} == {
        "1_allreduce": "0.2",
        "13_gemm_allreduce": "0.05",
    }


def test_sorting_by_peak_puts_entries_without_one_last(two_problem_submission, client):
    first = two_problem_submission(model="with-peak")
    second = two_problem_submission(first=no_floor_document(), second=no_floor_document(), model="no-peak")
    html = client.get("/leaderboard/gpu-h200x8/?sort=peak").content.decode()
    assert html.index("with-peak") < html.index("no-peak")
    assert LeaderboardEntry.objects.get(submission=second).geomean_peak_fraction is None
    assert LeaderboardEntry.objects.get(submission=first).geomean_peak_fraction is not None


def test_a_cpu_profile_says_it_has_no_peak_rates(owner, submit, finish, client):
    submission = submit(owner, model="cpu-run")
    finish(submission.jobs.get(), no_floor_document("no peak rates for this device (CPU timings are never ranked)"))
    submissions_services.submission_publish(submission, owner)
    board = client.get("/leaderboard/cpu-gloo/").content.decode()
    assert "this profile has no known peak rates" in board
    problem = client.get("/problems/1_allreduce/").content.decode()
    assert 'id="peak-empty"' in problem and "no peak rates for this device" in problem


# --- audits ----------------------------------------------------------------------------------------------------------


def test_a_reward_hack_audit_takes_the_result_out_of_ranking_as_a_flag_does(two_problem_submission, staff):
    submission = two_problem_submission()
    scoring_services.audit_record(submission, 13, Audit.REWARD_HACK, "returns the cached output of trial 0", staff)
    score = ProblemScore.objects.get(submission=submission, problem_id=13)
    assert score.audit == "reward_hack" and score.flagged and not score.correct and not score.faster
    entry = LeaderboardEntry.objects.get(submission=submission)
    assert (entry.correct, entry.faster, entry.audited_results) == (1, 1, 1)
    assert entry.geomean_peak_fraction == pytest.approx(0.2)  # the hacked result left the geomean too
    # Changing the verdict gives the result back.
    scoring_services.audit_record(submission, 13, Audit.CLEAN, "re-read: the cache is keyed by content", staff)
    assert LeaderboardEntry.objects.get(submission=submission).correct == 2
    assert Audit.objects.filter(submission=submission).count() == 1  # one audit per cell, updated


def test_a_whole_submission_reward_hack_is_shown_without_a_rank(two_problem_submission, staff, client):
    hacked = two_problem_submission(model="hacked")
    clean = two_problem_submission(model="honest")
    scoring_services.audit_record(hacked, None, Audit.REWARD_HACK, "every kernel reads the reference's output", staff)
    assert not LeaderboardEntry.objects.get(submission=hacked).ranked
    assert LeaderboardEntry.objects.get(submission=clean).ranked
    html = client.get("/leaderboard/gpu-h200x8/").content.decode()
    assert 'data-audit="reward_hack"' in html and "audited: reward hack" in html


def test_audit_badges_on_every_page_and_export_where_the_result_appears(two_problem_submission, staff, client):
    submission = two_problem_submission()
    scoring_services.audit_record(submission, 1, Audit.INTERESTING, "a one-shot ring all-reduce in Triton", staff)
    for url in (
        f"/submissions/{submission.pk}/",
        "/problems/1_allreduce/?profile=gpu-h200x8",
        f"/audits/?submission={submission.pk}",
        "/audits/",
    ):
        html = client.get(url).content.decode()
        assert 'data-audit="interesting"' in html, url
    assert "1 audited result" in client.get("/leaderboard/gpu-h200x8/").content.decode()
    sub_rows = list(
        csv.DictReader(io.StringIO(client.get(f"/submissions/{submission.pk}/?format=csv").content.decode()))
    )
    assert [r["audit"] for r in sub_rows if r["stem"] == "1_allreduce"] == ["interesting"]
    problem_rows = client.get("/problems/1_allreduce/?profile=gpu-h200x8&format=json").json()["rows"]
    assert problem_rows[0]["audit"] == "interesting"
    board_rows = list(csv.DictReader(io.StringIO(client.get("/leaderboard/gpu-h200x8/?format=csv").content.decode())))
    assert board_rows[0]["audited_results"] == "1"
    audits = client.get("/audits/?format=json").json()["rows"]
    assert (
        audits[0]["verdict"] == "interesting"
        and audits[0]["auditor"] == "sam"
        and audits[0]["problem"] == "1_allreduce"
    )


def test_the_api_lists_audits_of_listed_submissions_only(two_problem_submission, owner, submit, staff, client):
    listed = two_problem_submission()
    private = submit(owner, model="private")
    scoring_services.audit_record(listed, 1, Audit.RUBRIC_LEAK, "the docstring gives the ring order", staff)
    scoring_services.audit_record(private, None, Audit.CLEAN, "private note", staff)
    public = client.get("/api/v1/audits/").json()
    assert [(a["submission"], a["verdict"], a["problem_stem"]) for a in public] == [
        (listed.pk, "rubric_leak", "1_allreduce")
    ]
    assert public[0]["auditor"] == "sam" and public[0]["note"] and public[0]["updated_at"]
    assert client.get(f"/api/v1/audits/?submission={private.pk}").json() == []
    client.force_login(staff)
    assert len(client.get("/api/v1/audits/").json()) == 2
    assert client.get("/api/v1/audits/?submission=x").status_code == 400
    detail = client.get(f"/api/v1/submissions/{listed.pk}/").json()
    assert detail["audits"][0]["verdict"] == "rubric_leak"


def test_staff_record_audits_from_the_submission_page_and_others_cannot(two_problem_submission, staff, owner, client):
    submission = two_problem_submission()
    client.force_login(owner)
    assert (
        client.post(f"/submissions/{submission.pk}/audit", {"verdict": "clean", "note": "mine is fine"}).status_code
        == 403
    )
    assert not Audit.objects.exists()
    client.force_login(staff)
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert 'id="audit-panel"' in page
    response = client.post(
        f"/submissions/{submission.pk}/audit",
        {"problem": "13", "verdict": "reward_hack", "note": "times a cached result"},
    )
    assert response.status_code == 302
    audit = Audit.objects.get()
    assert (audit.problem_id, audit.verdict, audit.auditor, audit.result_id) == (
        13,
        "reward_hack",
        staff,
        ProblemScore.objects.get(submission=submission, problem_id=13).result_id,
    )
    assert client.post(f"/submissions/{submission.pk}/audit", {"verdict": "sabotage", "note": "x"}).status_code == 302
    assert Audit.objects.count() == 1  # a bad verdict is refused with a message, nothing stored


def test_the_admin_records_audits_through_the_service(two_problem_submission, staff, client):
    submission = two_problem_submission()
    client.force_login(staff)
    response = client.post(
        "/admin/scoring/audit/add/",
        {"submission": submission.pk, "problem": 1, "verdict": "reward_hack", "note": "patched the clock"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert ProblemScore.objects.get(submission=submission, problem_id=1).flagged
    audit = Audit.objects.get()
    assert audit.auditor == staff
    client.post(f"/admin/scoring/audit/{audit.pk}/delete/", {"post": "yes"})
    assert not ProblemScore.objects.get(submission=submission, problem_id=1).flagged
