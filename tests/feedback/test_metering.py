"""Metering adds up exactly: each run's wall is the judge's wall_s (integer ms), GPU-seconds are W x wall on GPU
profiles and 0 on CPU ones; sessions, the API, the linked submission's page and its leaderboard row show the same
sums; platform failures and profile runs are never metered."""

import json

from rest_framework.test import APIClient

from leaderboard.feedback import services
from leaderboard.feedback.models import FeedbackRun
from leaderboard.submissions import services as submissions_services
from tests.feedback.conftest import fake_document, source

CODE = source("good_1.py")


def test_gpu_profile_metering_is_exact(owner, gpu, complete, submit):
    session = services.session_open(owner.submitter, "gpu-h200x8")
    walls = [2.5, 1.25, 0.001, 3600.0004]
    runs = [services.run_create(owner.submitter, session.pk, "1", CODE) for _ in walls]
    for run, wall in zip(runs, walls, strict=True):
        done = complete(run, fake_document(wall_s=wall))
        assert done.wall_ms == round(wall * 1000) and done.gpu_ms == 8 * done.wall_ms
        assert done.feedback["metering"] == {"wall_s": done.wall_ms / 1000, "gpu_seconds": done.gpu_ms / 1000}
    totals = services.session_totals([session.pk])[session.pk]
    assert totals == {
        "runs": 4,
        "wall_ms": 2500 + 1250 + 1 + 3600000,
        "gpu_ms": 8 * (2500 + 1250 + 1 + 3600000),
        "rank_ms": 8 * (2500 + 1250 + 1 + 3600000),
    }  # W x wall: on a GPU profile, the GPU-ms

    # A platform failure is retried and not metered; when retries run out the run is refunded, still not metered.
    failing = services.run_create(owner.submitter, session.pk, "1", CODE)
    for _ in range(failing.max_attempts):
        assert services.run_claim(failing.pk, "w") is not None
        services.run_infra_error(failing.pk, "w", "worker lost")
    failing.refresh_from_db()
    assert failing.status == "failed" and failing.refunded_at is not None and failing.infra_failures == 3
    assert failing.wall_ms == 0 and services.session_totals([session.pk])[session.pk] == totals

    # Linked to an agentic submission: the same sums on the API, the submission page and its leaderboard row.
    submission = submit(owner, profile="gpu-h200x8", protocol="agentic_feedback", tokens=123456, dollars="7.50")
    services.session_link(session, submission, owner)
    cost = services.measured_cost([submission.pk])[submission.pk]
    assert (cost["runs"], cost["wall_ms"], cost["gpu_ms"]) == (4, totals["wall_ms"], totals["gpu_ms"])
    assert cost["gpu_hours"] == totals["gpu_ms"] / 3.6e6
    client = APIClient()
    client.force_authenticate(owner)
    detail = client.get(f"/api/v1/feedback/sessions/{session.pk}/").json()
    assert detail["metering"]["wall_ms"] == totals["wall_ms"] and detail["metering"]["gpu_ms"] == totals["gpu_ms"]
    assert sum(r["gpu_ms"] for r in detail["runs"]) == totals["gpu_ms"]
    submissions_services.submission_publish(submission, owner)
    html = client.get("/leaderboard/gpu-h200x8/").content.decode()
    row = html[html.index(f'data-submission="{submission.pk}"') :]
    row = row[: row.index("</tr>")]
    # One count of feedback runs (leaderboard/scoring/costs.py) and the session's cost in the profile's unit
    # (GPU·s here).
    assert ", 4 feedback runs" in row and f"{totals['gpu_ms'] / 1000:.1f} GPU·s" in row
    assert "self-reported</span> 123 k tokens" in row or "self-reported" in row
    page = client.get(submission.get_absolute_url()).content.decode()
    assert "4 feedback runs" in page and f"{totals['wall_ms'] / 1000:.1f} s wall" in page
    # The Pareto plot: the submission at its measured GPU-hours and Faster count.
    figure = json.loads(html.split('id="pareto-data" type="application/json">')[1].split("</script>")[0])
    agentic = next(t for t in figure["data"] if t["name"].startswith("agentic"))
    assert agentic["x"] == [totals["gpu_ms"] / 3.6e6] and agentic["y"] == [0]
    assert "GPU-hours" in figure["layout"]["xaxis"]["title"]["text"]


def test_cpu_profile_meters_wall_and_zero_gpu_seconds(owner, session, complete):
    run = complete(services.run_create(owner.submitter, session.pk, "1", CODE), fake_document(wall_s=9.8766))
    assert (run.wall_ms, run.gpu_ms) == (9877, 0)
    assert services.session_totals([session.pk])[session.pk] == {
        "runs": 1,
        "wall_ms": 9877,
        "gpu_ms": 0,
        "rank_ms": 2 * 9877,
    }  # rank-ms on CPU


def test_profile_runs_are_not_feedback(owner, session, submit, complete):
    submission = submit(owner, protocol="agentic_feedback")
    candidate = submission.candidates.get()
    run = services.profile_run_create(candidate, owner)
    assert run.kind == FeedbackRun.PROFILE and run.trials == 1 and run.session_id is None
    complete(run, fake_document(wall_s=4.0))
    services.session_link(session, submission, owner)
    assert services.measured_cost([submission.pk])[submission.pk]["runs"] == 0


def test_agentic_submission_without_a_session_is_shown_unmetered(owner, submit, client):
    submission = submit(owner, protocol="agentic_feedback")
    submissions_services.submission_publish(submission, owner)
    html = client.get("/").content.decode()
    assert "unmetered</span> no feedback session linked" in html
