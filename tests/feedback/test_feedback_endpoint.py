"""POST /api/v1/feedback/ end to end on the CPU profile: the real judge (W = 2, problem 1 at M = N = 64) run by a
real dramatiq worker thread from the feedback-cpu-gloo queue, for a wrong, a crashing, a non-compiling and a correct
candidate. Feedback runs never reach a leaderboard, and their seeds are the published ones."""

import pytest
from rest_framework.test import APIClient

from leaderboard.feedback import seeds
from leaderboard.feedback.models import FeedbackRun
from leaderboard.jobs.models import EvaluationJob, Result
from leaderboard.scoring.models import LeaderboardEntry, ProblemScore
from tests.feedback.conftest import source, wait_finished

pytestmark = pytest.mark.django_db(transaction=True)


def api(token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def ask(client, session_id, name, **extra):
    response = client.post(
        "/api/v1/feedback/",
        {
            "session": session_id,
            "problem": "1_allreduce",
            "code": source(name),
            "filename": name,
            "M": 64,
            "N": 64,
            **extra,
        },
        format="json",
    )
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "queued" and body["queue"] == "feedback-cpu-gloo"
    return body


def test_feedback_for_wrong_crashing_broken_and_correct_candidates(quick, token, feedback_worker):
    client = api(token)
    opened = client.post("/api/v1/feedback/sessions/", {"profile": "cpu-gloo", "label": "e2e"}, format="json")
    assert opened.status_code == 201
    session_id = opened.json()["id"]
    queued = {name: ask(client, session_id, name) for name in ("wrong_1.py", "crash_1.py", "syntax_1.py", "good_1.py")}
    published = seeds.public_seeds(1)
    runs = {}
    for name, body in queued.items():
        wait_finished(body["id"])
        got = client.get(body["url"])
        assert got.status_code == 200
        runs[name] = got.json()
        assert runs[name]["status"] == "done", runs[name]
        assert runs[name]["seeds"] == published[:2] + published[-1:]

    wrong = runs["wrong_1.py"]["feedback"]
    assert wrong["verdict"] == "incorrect" and wrong["timing"] is None
    miss = wrong["mismatch"]
    assert miss["failing_ranks"] == [1] and miss["seed"] == published[0]
    rank1 = next(r for r in miss["ranks"] if r["rank"] == 1)
    assert rank1["max_abs_error"] > 0 and rank1["where"] and rank1["first_mismatch_index"] is not None
    assert next(r for r in miss["ranks"] if r["rank"] == 0)["ok"] is True
    assert wrong["speed_of_light"]["efficiency"] == "n/a"

    crash = runs["crash_1.py"]["feedback"]
    assert crash["verdict"] == "runtime_error" and crash["mismatch"] is None
    assert "boom: this candidate crashes on purpose" in crash["compile_log"]["message"]
    assert [r["rank"] for r in crash["compile_log"]["ranks"]] == [0, 1]  # the candidate's own ranks only

    broken = runs["syntax_1.py"]["feedback"]
    assert broken["verdict"] == "compile_error" and "SyntaxError" in broken["compile_log"]["message"]

    good = runs["good_1.py"]["feedback"]
    assert good["verdict"] == "correct" and good["mismatch"] is None
    timing = good["timing"]
    lo, hi = timing["speedup_ci"]
    assert lo <= timing["speedup"] <= hi and timing["ranked"] is False and timing["method"] == "wall_clock"
    assert good["speed_of_light"]["efficiency"] == "n/a" and "CPU" in good["speed_of_light"]["reason"]

    # Every trial of every run used published seeds only.
    for run in FeedbackRun.objects.all():
        assert all(t["seed"] in published for t in run.document.get("trials", []))
        assert all(seeds.is_public(s) for s in run.seeds)
    # Metering: the judge's wall time, 0 GPU-seconds on the CPU profile, and the session adds them up exactly.
    detail = client.get(f"/api/v1/feedback/sessions/{session_id}/").json()
    rows = list(FeedbackRun.objects.filter(session_id=session_id))
    assert all(r.wall_ms == round(r.document["wall_s"] * 1000) and r.gpu_ms == 0 for r in rows)
    assert detail["metering"]["runs"] == 4
    assert detail["metering"]["wall_ms"] == sum(r.wall_ms for r in rows) == sum(x["wall_ms"] for x in detail["runs"])
    assert detail["metering"]["gpu_ms"] == 0
    # Nothing of this reached a leaderboard.
    assert not EvaluationJob.objects.exists() and not Result.objects.exists()
    assert not ProblemScore.objects.exists() and not LeaderboardEntry.objects.exists()
