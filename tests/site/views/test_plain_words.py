"""Pages in plain words: no raw key or Python value on a rendered page (a scan of every page the seeded site serves),
sizes in binary units, whiskers on lanes of their own with the interval on hover, the Pareto plot's y axis meaningful
on an unranked profile, the API root listing every routed endpoint."""

import re

import pytest

from leaderboard.catalogue.models import HardwareProfile
from leaderboard.jobs.models import EvaluationJob, Result
from leaderboard.scoring import pareto, plots
from leaderboard.submissions import services as submissions_services
from leaderboard.submissions.models import Transcript
from tests.site.conftest import GOOD_1

pytestmark = pytest.mark.django_db

# What a page must never show: a Python value after a word ("warm_start False"), a key with underscores where words
# belong ("fast_1_5", "best_measured", "warm_start"), its spaced twin ("fast 1 5"), a count in the wrong number
# ("1 steps", "1 feedback runs").
RAW = [
    re.compile(p, re.M)
    for p in (
        r"\b[A-Za-z]\w* (?:True|False|None)\b",
        r"^(?:True|False|None)$",
        r"\bfast[ _]\d[ _]\d\b",
        r"\b(?:best_measured|self_selected|warm_start|infra_error)\b",
        r"(?<![\d.,])\b1 (?:steps|runs|feedback runs|results|evaluations)\b",
    )
]


def visible_text(html: str) -> str:
    html = re.sub(r"(?s)<(script|style)\b.*?</\1>", " ", html)
    html = re.sub(r"(?s)<(pre|code)\b.*?</\1>", " ", html)  # code, logs and values to type are shown as they are
    text = re.sub(r"<[^>]+>", "\n", html)
    return "\n".join(line.strip() for line in text.splitlines() if line.strip())


@pytest.fixture
def judged(owner, cpu):
    submission = submissions_services.submission_create(
        owner.submitter,
        {"model": "m", "protocol": "best_of_k", "attempts": 2, "profile": "cpu-gloo", "selection": "best_measured"},
        [("1_allreduce_torch.py", GOOD_1)],
    )
    job = submission.jobs.get()
    EvaluationJob.objects.filter(pk=job.pk).update(status="done")
    Result.objects.create(
        job=job,
        run=job.run,
        verdict="correct",
        message="ok",
        speedup=1.1,
        faster=False,
        document={"environment": {"warm_start": False, "torch": "2.9", "sandbox": {}}},
    )
    Transcript.objects.create(
        submission=submission,
        problem_id=1,
        attempt=1,
        filename="t.jsonl",
        content="{}\n",
        steps=1,
        sha256="0" * 64,
        size=3,
    )
    submissions_services.submission_publish(submission, owner)
    return submission


def test_no_page_shows_a_raw_key_or_python_value(client, owner, judged):
    client.force_login(owner)
    result = Result.objects.get()
    paths = [
        "/",
        "/leaderboard/cpu-gloo/",
        "/leaderboard/cpu-gloo/?protocol=best_of_k",
        "/problems/",
        "/problems/1_allreduce/",
        judged.get_absolute_url(),
        f"/results/{result.pk}/",
        "/account/",
        "/submit/",
        "/getting-started/",
        f"/submissions/{judged.pk}/metadata",
        f"/candidates/{judged.candidates.get().pk}/",
    ]
    found = {}
    for path in paths:
        response = client.get(path)
        assert response.status_code == 200, path
        text = visible_text(response.content.decode())
        hits = [m.group(0) for pattern in RAW for m in pattern.finditer(text)]
        if hits:
            found[path] = hits
    assert found == {}
    page = client.get(judged.get_absolute_url()).content.decode()
    assert "(1 step," in page and "warm start" in visible_text(page)


def test_submit_page_gives_limits_in_binary_units(client, owner, cpu, settings):
    settings.PKB_MAX_UPLOAD_BYTES, settings.PKB_MAX_FILE_BYTES = 64 * 1024 * 1024, 512 * 1024
    client.force_login(owner)
    page = client.get("/submit/").content.decode()
    assert "64 MiB per upload, 512 KiB per file" in page


def test_whiskers_sit_on_lanes_of_their_own_and_hover_shows_the_interval():
    points = [
        (i, f"m{i}", "one_shot", "correct", 1.0 + i / 100, 0.9, 1.2, True, False, None, None, None) for i in range(5)
    ]
    figure = plots.strip_figure(points)
    trace = figure["data"][0]
    assert len(set(trace["y"])) == 5 and all(-0.5 < y < 0.5 for y in trace["y"])
    assert trace["customdata"][0] == [0.9, 1.2] and "interval [%{customdata[0]:.3f}x" in trace["hovertemplate"]
    assert figure["layout"]["yaxis"]["ticktext"] == ["one-shot"]


def test_pareto_plots_correct_on_an_unranked_profile(owner, cpu, judged):
    gpu = HardwareProfile.objects.get(slug="gpu-h200x8")
    data = pareto.pareto(cpu)
    assert not cpu.ranked and data["y_axis"].startswith("Correct")
    assert [p["y"] for p in data["points"]] == [p["correct"] for p in data["points"]]
    assert pareto.pareto(gpu)["y_axis"] == "Faster (of 87)"


def test_api_root_lists_every_endpoint(client):
    from leaderboard import urls as site_urls
    from leaderboard.api import urls as api_urls

    listed = client.get("/api/v1/").json()
    routes = [
        p
        for p in list(api_urls.urlpatterns) + list(site_urls.feedback_urlpatterns)
        if p.name and p.name.startswith("api-") and p.name != "api-root"
    ]
    assert len(listed) == len(routes) >= 20
    assert listed["submission"].endswith("/api/v1/submissions/{id}/")
    assert listed["feedback_session_link"].endswith("/api/v1/feedback/sessions/{id}/link/")


def test_staff_are_told_a_submission_is_someone_elses(client, owner, staff, cpu):
    submission = submissions_services.submission_create(
        owner.submitter,
        {"model": "m", "protocol": "one_shot", "attempts": 1, "profile": "cpu-gloo"},
        [("1_allreduce_torch.py", GOOD_1)],
    )
    client.force_login(staff)
    page = client.get(submission.get_absolute_url()).content.decode()
    assert "Staff view: this is alice's submission" in page
    client.force_login(owner)
    assert "Staff view" not in client.get(submission.get_absolute_url()).content.decode()
