"""Public read endpoints and the OpenAPI schema."""

import pytest
from rest_framework.test import APIClient

from leaderboard.submissions import services as submissions_services
from tests.site.conftest import judge_document


@pytest.fixture
def published(owner, submit, finish):
    submission = submit(owner)
    finish(submission.jobs.get(), judge_document())
    submissions_services.submission_publish(submission, owner)
    return submission


def test_schema_is_served(catalogue):
    response = APIClient().get("/api/v1/schema/")
    assert response.status_code == 200
    text = response.content.decode()
    assert "/api/v1/submissions/" in text and "bearerToken" in text


def test_profiles(catalogue):
    slugs = [p["slug"] for p in APIClient().get("/api/v1/profiles/").json()]
    assert set(slugs) == {"cpu-gloo", "gpu-h200x8", "gpu-h200x1", "gpu-shared-w8"}


def test_leaderboard_keeps_protocols_apart(published):
    body = APIClient().get("/api/v1/leaderboard/cpu-gloo/").json()
    assert [s["protocol"] for s in body["sections"]] == ["one_shot", "best_of_k", "agentic_feedback"]
    entry = body["sections"][0]["entries"][0]
    assert (entry["correct"], entry["faster"], entry["rank"]) == (1, 1, None)  # CPU profile: never ranked
    assert body["ranked_profile"] is False


def test_problems_and_problem_detail(published):
    problems = APIClient().get("/api/v1/problems/?profile=cpu-gloo").json()
    assert len(problems) == 87 and problems[0]["solved"] == 1
    detail = APIClient().get("/api/v1/problems/1_allreduce/").json()
    assert detail["problem"]["implemented"] and "dist.all_reduce" in detail["problem"]["reference_source"]
    assert detail["scores"][0]["status"] == "correct"


def test_unknown_profile_and_problem_are_404(catalogue):
    assert APIClient().get("/api/v1/leaderboard/nope/").status_code == 404
    assert APIClient().get("/api/v1/problems/999/").status_code == 404


def test_ranks_on_a_ranked_profile_skip_flagged_entries_and_pages(owner, submit, finish, gpu):
    made = []
    for speed in (3.0, 2.0, 1.5):
        submission = submit(owner, profile="gpu-h200x8", model=f"m{speed}")
        finish(submission.jobs.get(), judge_document(speedup=speed, lo=speed - 0.1, hi=speed + 0.1))
        submissions_services.submission_publish(submission, owner)
        made.append(submission)
    submissions_services.submission_flag(made[0], "suspicious")
    body = APIClient().get("/api/v1/leaderboard/gpu-h200x8/?protocol=one_shot&sort=geomean").json()
    ranks = [(e["submission"]["model_name"], e["rank"]) for e in body["sections"][0]["entries"]]
    assert ranks == [("m3.0", None), ("m2.0", 1), ("m1.5", 2)]
    page = APIClient().get("/api/v1/leaderboard/gpu-h200x8/?protocol=one_shot&sort=geomean&offset=2&limit=1").json()
    assert [(e["submission"]["model_name"], e["rank"]) for e in page["sections"][0]["entries"]] == [("m1.5", 2)]
    assert page["sections"][0]["more"] is False


def test_leaderboard_rows_say_what_the_entry_serializer_says(owner, submit, finish, gpu):
    """The API builds its leaderboard rows by hand from values (hundreds of rows a request); each must say exactly
    what EntrySerializer, the schema it documents, says of the same entry: ranks, costs, the reported dollars, dates."""
    import json

    from rest_framework.renderers import JSONRenderer

    from leaderboard.api.serializers import EntrySerializer
    from leaderboard.scoring.models import LeaderboardEntry
    from leaderboard.submissions.models import Submission

    for speed, dollars in ((2.0, "12.30"), (1.5, None)):
        submission = submit(owner, profile="gpu-h200x8", model=f"m{speed}", label="a label")
        Submission.objects.filter(pk=submission.pk).update(reported_dollars=dollars, reported_tokens=1234)
        finish(submission.jobs.get(), judge_document(speedup=speed, lo=speed - 0.1, hi=speed + 0.1))
        submissions_services.submission_publish(submission, owner)
    body = APIClient().get("/api/v1/leaderboard/gpu-h200x8/?protocol=one_shot&sort=geomean").json()
    rows = body["sections"][0]["entries"]
    assert [row["rank"] for row in rows] == [1, 2]
    for row in rows:
        entry = LeaderboardEntry.objects.select_related("submission").get(submission_id=row["submission"]["id"])
        entry.rank = row["rank"]
        assert row == json.loads(JSONRenderer().render(EntrySerializer(entry).data))
