"""leaderboard/scoring/costs.py: one definition of each measured cost, and the submission page, its leaderboard row, the
API and the CSV/JSON export all show the same numbers (the agentic case of issue 26: a CPU profile's rank-seconds never
called GPU-seconds, and the feedback-run count the same everywhere)."""

import csv
import io
import re

import pytest
from rest_framework.test import APIClient

from leaderboard.feedback import services as feedback
from leaderboard.scoring import costs
from leaderboard.submissions.models import Submission
from tests.feedback.conftest import complete, fake_document, source  # noqa: F401 (fixture)
from tests.site.conftest import judge_document

CODE = source("good_1.py")


def agentic_with_feedback(owner, submit, finish, complete, profile="cpu-gloo", walls=(2.5, 1.25)):  # noqa: F811
    """An agentic submission (one judged file, 2.0 s wall) whose linked session has two counted runs, plus one
    upload marked --feedback-for it; a platform failure in the session never counts."""
    session = feedback.session_open(owner.submitter, profile)
    for wall in walls:
        complete(feedback.run_create(owner.submitter, session.pk, "1", CODE), fake_document(wall_s=wall))
    failing = feedback.run_create(owner.submitter, session.pk, "1", CODE)
    assert feedback.run_claim(failing.pk, "w") is not None
    feedback.run_infra_error(failing.pk, "w", "worker lost")
    submission = submit(owner, profile=profile, protocol="agentic_feedback")
    finish(submission.jobs.get(), judge_document())
    feedback.session_link(session, submission, owner)
    extra = submit(owner, profile=profile, feedback_for=submission.pk)
    finish(extra.jobs.get(), judge_document(verdict="incorrect"))
    from leaderboard.submissions import services as submissions_services

    submissions_services.submission_publish(submission, owner)
    submission.refresh_from_db()
    return submission


def shown(owner, client, submission):
    """(page text of the cost line, leaderboard row text, API submission, CSV row, JSON export row)."""
    client.force_login(owner)
    page = client.get(submission.get_absolute_url()).content.decode()
    cost_line = re.search(r"<dt>Cost</dt><dd>(.*?)</dd>", page, re.S).group(1)
    slug = submission.profile.slug
    board = client.get(f"/leaderboard/{slug}/?protocol=agentic_feedback").content.decode()
    row = next(r for r in board.split("</tr>") if f"/submissions/{submission.pk}/" in r)
    api = APIClient()
    api.force_authenticate(owner)
    detail = api.get(f"/api/v1/submissions/{submission.pk}/").json()
    board_api = api.get(f"/api/v1/leaderboard/{slug}/?protocol=agentic_feedback").json()
    listed = next(e["submission"] for e in _entries(board_api) if e["submission"]["id"] == submission.pk)
    rows = csv.DictReader(io.StringIO(client.get(f"/leaderboard/{slug}/?format=csv").content.decode()))
    csv_row = next(r for r in rows if r["submission"] == str(submission.pk))
    json_row = next(
        r for r in client.get(f"/leaderboard/{slug}/?format=json").json()["rows"] if r["submission"] == submission.pk
    )
    return _text(cost_line), _text(row), detail, csv_row, json_row, listed


def _entries(document):
    """The leaderboard API's rows, whichever envelope it uses (a list, or sections/results of entries)."""
    if isinstance(document, list):
        for item in document:
            yield from _entries(item)
    elif isinstance(document, dict):
        if "submission" in document and isinstance(document["submission"], dict):
            yield document
        else:
            for value in document.values():
                yield from _entries(value)


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


@pytest.mark.django_db
def test_cpu_agentic_costs_agree_on_page_api_and_exports(owner, submit, finish, complete, client):  # noqa: F811
    submission = agentic_with_feedback(owner, submit, finish, complete)
    cost = costs.of(submission)
    # The definition: W x wall of its own result; session runs that returned feedback + the feedback-for upload.
    assert cost.device == "cpu" and cost.rank_seconds == pytest.approx(2 * 2.0) and cost.gpu_seconds is None
    assert cost.feedback_runs == 2 + 1 and cost.sessions == 1
    assert cost.feedback_wall_s == pytest.approx(3.75) and cost.feedback_rank_seconds == pytest.approx(2 * 3.75)
    assert costs.feedback_runs(submission.pk) == submission.feedback_runs == 3

    page, row, api, csv_row, json_row, listed = shown(owner, client, submission)
    assert {k: listed[k] for k in ("cost_unit", "rank_seconds", "gpu_seconds", "feedback_runs")} == {
        k: api[k] for k in ("cost_unit", "rank_seconds", "gpu_seconds", "feedback_runs")
    }
    assert "4.0 rank·s (CPU), 3 feedback runs" in page and "GPU" not in page, page
    assert "feedback session: 3.8 s wall, 7.5 rank·s" in page
    assert "4.0 rank·s, 3 feedback runs" in row and "GPU" not in row, row
    assert (api["cost_unit"], api["rank_seconds"], api["gpu_seconds"], api["feedback_runs"]) == (
        "rank-seconds",
        4.0,
        None,
        3,
    )
    assert (
        csv_row["cost_unit"],
        csv_row["measured_rank_seconds"],
        csv_row["measured_gpu_seconds"],
        csv_row["measured_feedback_runs"],
        csv_row["measured_feedback_wall_s"],
    ) == ("rank-seconds", "4.0", "", "3", "3.8")
    assert (
        json_row["measured_rank_seconds"],
        json_row["measured_gpu_seconds"],
        json_row["measured_feedback_runs"],
    ) == (4.0, None, 3)
    assert "measured_gpu_seconds" in csv_row  # the column stays, empty on CPU: never rank-seconds under that name


@pytest.mark.django_db
def test_gpu_agentic_costs_are_gpu_seconds_everywhere(owner, gpu, submit, finish, complete, client):  # noqa: F811
    submission = agentic_with_feedback(owner, submit, finish, complete, profile="gpu-h200x8", walls=(1.0,))
    cost = costs.of(submission)
    assert cost.gpu_seconds == cost.rank_seconds == pytest.approx(8 * 2.0) and cost.feedback_runs == 2
    page, row, api, csv_row, json_row, _ = shown(owner, client, submission)
    assert "16.0 GPU·s, 2 feedback runs" in page and "rank·s" not in page, page
    assert "feedback session: 1.0 s wall, 8.0 GPU·s" in page
    assert "16.0 GPU·s, 2 feedback runs" in row
    assert (api["cost_unit"], api["rank_seconds"], api["gpu_seconds"], api["feedback_runs"]) == (
        "GPU-seconds",
        16.0,
        16.0,
        2,
    )
    assert (csv_row["measured_gpu_seconds"], csv_row["measured_rank_seconds"], csv_row["measured_feedback_runs"]) == (
        "16.0",
        "16.0",
        "2",
    )


@pytest.mark.django_db
def test_a_run_landing_after_the_link_counts(owner, submit, finish, complete):  # noqa: F811
    session = feedback.session_open(owner.submitter, "cpu-gloo")
    queued = feedback.run_create(owner.submitter, session.pk, "1", CODE)
    submission = submit(owner, protocol="agentic_feedback")
    feedback.session_link(session, submission, owner)
    assert Submission.objects.get(pk=submission.pk).feedback_runs == 0
    complete(queued, fake_document(wall_s=1.0))
    assert Submission.objects.get(pk=submission.pk).feedback_runs == 1 == costs.of(submission).feedback_runs


@pytest.mark.django_db(transaction=True)
def test_feedback_show_names_rank_seconds_on_cpu(live_server, owner, cpu, complete, capsys):  # noqa: F811
    from leaderboard.accounts import services as accounts_services
    from pkb_client import feedback as client

    token = accounts_services.token_create(owner.submitter, "cli", ["read", "submit"])[1]
    session = feedback.session_open(owner.submitter, "cpu-gloo")
    complete(feedback.run_create(owner.submitter, session.pk, "1", CODE), fake_document(wall_s=2.5))
    assert client.main(["show", str(session.pk), "--url", live_server.url, "--token", token]) == 0
    out = capsys.readouterr().out
    assert "1 feedback runs, wall 2.5 s, 5.0 rank-seconds (CPU profile: no GPU-seconds)" in out, out


@pytest.mark.django_db
def test_refresh_costs_command_brings_old_counts_to_the_definition(owner, submit, finish, complete):  # noqa: F811
    from django.core.management import call_command

    submission = agentic_with_feedback(owner, submit, finish, complete)
    Submission.objects.filter(pk=submission.pk).update(feedback_runs=1, gpu_seconds=99.0)  # as an old site stored
    out = io.StringIO()
    call_command("refresh_costs", stdout=out)
    submission.refresh_from_db()
    assert (submission.feedback_runs, submission.gpu_seconds) == (3, pytest.approx(4.0))
    assert "1 feedback count(s) changed" in out.getvalue()


@pytest.mark.django_db
def test_cpu_session_and_run_pages_say_rank_seconds(owner, cpu, complete, client):  # noqa: F811
    session = feedback.session_open(owner.submitter, "cpu-gloo")
    run = complete(feedback.run_create(owner.submitter, session.pk, "1", CODE), fake_document(wall_s=2.5))
    client.force_login(owner)
    session_page = _text(client.get(f"/feedback/sessions/{session.pk}/").content.decode())
    run_page = _text(client.get(f"/feedback/runs/{run.pk}/").content.decode())
    assert "1 feedback run, 2.5 s wall, 5.0 rank·s" in session_page and "GPU·" not in session_page, session_page
    assert "2.5 s wall, 5.0 rank·s" in run_page and "GPU·" not in run_page, run_page
    api = APIClient()
    api.force_authenticate(owner)
    metering = api.get(f"/api/v1/feedback/sessions/{session.pk}/").json()["metering"]
    assert (metering["device_seconds"], metering["unit"], metering["gpu_seconds"]) == (5.0, "rank-seconds", 0)
