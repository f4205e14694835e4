"""Server-rendered pages: content, access rules, exports, and query counts that stay constant as data grows."""

import csv
import io
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard.submissions import services as submissions_services
from tests.site.conftest import GOOD_1, GOOD_13, judge_document

PAGES = ["/", "/leaderboard/cpu-gloo/", "/problems/", "/problems/1_allreduce/", "/problems/13_gemm_allreduce/"]


@pytest.fixture
def make_published(owner, submit, finish):
    counter = {"n": 0}

    def make(count=1, protocol="one_shot"):
        made = []
        for _ in range(count):
            counter["n"] += 1
            k = 2 if protocol == "best_of_k" else 1
            files = (
                {"attempt_1/1_allreduce_torch.py": GOOD_1, "attempt_2/13_gemm_allreduce_torch.py": GOOD_13}
                if k == 2
                else {"1_allreduce_torch.py": GOOD_1, "13_gemm_allreduce_torch.py": GOOD_13}
            )
            submission = submit(owner, files, model=f"model-{counter['n']}", protocol=protocol, attempts=k)
            first, second = submission.jobs.order_by("id")
            finish(first, judge_document(speedup=1.0 + counter["n"] / 10))
            finish(second, judge_document(verdict="incorrect"))
            submissions_services.submission_publish(submission, owner)
            made.append(submission)
        return made

    return make


def test_leaderboard_shows_both_columns_per_protocol(client, make_published):
    make_published(1)
    make_published(1, protocol="best_of_k")
    html = client.get("/").content.decode()
    assert "Correct (of 87)" in html and "Faster (of 87)" in html
    assert html.index("one-shot") < html.index("best-of-k") < html.index("agentic with feedback")
    assert "model-1" in html and "model-2" in html


def test_filters(client, make_published):
    make_published(1)
    make_published(1, protocol="best_of_k")
    html = client.get("/?protocol=best_of_k").content.decode()
    assert "model-2" in html and "model-1" not in html
    assert "model-1" not in client.get("/?k=2").content.decode()
    assert "model-1" not in client.get("/?backend=cuda").content.decode()


def test_private_submissions_are_not_listed(client, owner, submit):
    submit(owner, model="secret-model")
    assert "secret-model" not in client.get("/").content.decode()


@pytest.mark.parametrize("url", PAGES)
def test_public_pages_render(client, make_published, url):
    make_published(2)
    response = client.get(url)
    assert response.status_code == 200
    assert b'lang="en"' in response.content and b'id="main"' in response.content


def test_problem_page_shows_spec_reference_and_light(client, make_published):
    make_published(1)
    html = client.get("/problems/1_allreduce/").content.decode()
    assert "Specification" in html and "Reference source" in html and "dist.all_reduce" in html
    assert "Speed of light" in html and 'id="strip-data"' in html
    assert client.get("/problems/1/").status_code == 302


def test_problems_index_has_heatmap_and_solve_rates(client, make_published):
    make_published(2)
    html = client.get("/problems/").content.decode()
    assert 'id="heatmap-data"' in html and "100.0%" in html


@pytest.mark.parametrize("url", PAGES + ["/problems/?profile=cpu-gloo&protocol=one_shot"])
def test_exports(client, make_published, url):
    make_published(2)
    sep = "&" if "?" in url else "?"
    body = client.get(f"{url}{sep}format=csv").content.decode()
    rows = list(csv.reader(io.StringIO(body)))
    assert len(rows) >= 2
    data = client.get(f"{url}{sep}format=json").json()
    assert data["columns"] == rows[0] and len(data["rows"]) == len(rows) - 1


def test_leaderboard_csv_has_both_columns(client, make_published):
    make_published(1)
    rows = list(csv.DictReader(io.StringIO(client.get("/?format=csv").content.decode())))
    assert rows[0]["correct_of_87"] == "1" and rows[0]["faster_of_87"] == "1"


def test_submission_page_access(client, owner, outsider, submit, finish):
    submission = submit(owner)
    finish(submission.jobs.get(), judge_document())
    url = submission.get_absolute_url()
    assert client.get(url).status_code == 404
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    client.force_login(owner)
    html = client.get(url).content.decode()
    assert "Publish" in html and "/code" in html
    assert client.get(f"{url}?format=csv").status_code == 200


def test_submission_page_says_how_precise_its_timings_are(client, owner, submit, finish):
    # One process pair per job cannot call a gain inside its floor faster; K pairs can go lower. The page says which.
    submission = submit(owner)
    finish(submission.jobs.get(), judge_document())
    client.force_login(owner)
    url = submission.get_absolute_url()
    assert "one process pair: its interval is widened by 50.0% each way" in client.get(url).content.decode()
    profile = submission.profile
    profile.timing_pairs = 8
    profile.save()
    assert "timed in 8 fresh process pairs" in client.get(url).content.decode()


def test_submission_page_shows_timing_pairs_set_aside(client, owner, submit, finish):
    # A pair whose cross-check was suspect is left out of the speedup (evaluator/timing/pairs.py, triage): say so,
    # unflagged.
    submission = submit(owner)
    document = judge_document()
    document["timing"]["pairs"] = {"count": 7, "set_aside": [{"pair": 3, "unexplained_ms": 0.5, "allowance_ms": 0.4}]}
    finish(submission.jobs.get(), document)
    client.force_login(owner)
    html = client.get(submission.get_absolute_url()).content.decode()
    assert "1 timing pair set aside" in html


def test_code_and_logs_are_the_owners_until_published(client, owner, outsider, submit, finish):
    submission = submit(owner)
    result = finish(submission.jobs.get(), judge_document())
    candidate = submission.candidates.get()
    client.force_login(owner)
    assert client.get(f"/candidates/{candidate.pk}/code").content == GOOD_1
    assert "secret log line" in client.get(f"/results/{result.pk}.json").content.decode()
    logs = client.get(f"/results/{result.pk}/logs").content.decode()
    assert "candidate rank 0 stderr" in logs and "secret log line" in logs
    client.logout()
    assert client.get(f"/candidates/{candidate.pk}/code").status_code == 404
    assert client.get(f"/results/{result.pk}/logs").status_code == 404
    submissions_services.submission_publish(submission, owner)
    client.force_login(outsider)
    assert client.get(f"/candidates/{candidate.pk}/code").status_code == 200
    assert "secret log line" in client.get(f"/results/{result.pk}.json").content.decode()


def test_environment_is_public_logs_are_not(client, owner, outsider, submit, finish):
    submission = submit(owner)
    result = finish(submission.jobs.get(), judge_document())
    submissions_services.submission_set_visibility(submission, "private")
    client.force_login(owner)
    submission.refresh_from_db()
    assert "gloo" in client.get(submission.get_absolute_url()).content.decode()
    client.force_login(outsider)
    assert client.get(f"/results/{result.pk}.json").status_code == 404


def test_publish_and_rerun_buttons(client, owner, outsider, submit, finish):
    submission = submit(owner)
    finish(submission.jobs.get(), judge_document())
    client.force_login(outsider)
    assert client.post(f"/submissions/{submission.pk}/publish").status_code == 404
    client.force_login(owner)
    assert client.post(f"/submissions/{submission.pk}/publish").status_code == 302  # no confirmation ticked
    submission.refresh_from_db()
    assert submission.visibility == "private"
    assert client.post(f"/submissions/{submission.pk}/publish", {"confirm": "yes"}).status_code == 302
    submission.refresh_from_db()
    assert submission.visibility == "public"
    assert client.post(f"/submissions/{submission.pk}/rerun").status_code == 302
    assert submission.jobs.get().status == "queued"
    client.force_login(outsider)
    assert client.post(f"/submissions/{submission.pk}/rerun").status_code == 403


def test_status_json(client, owner, submit):
    submission = submit(owner)
    client.force_login(owner)
    body = client.get(f"/submissions/{submission.pk}/status.json").json()
    assert body["jobs"]["queued"] == 1 and body["problems"] == {"1": "pending"}


def test_status_counts_jobs_in_the_build_stage_apart(client, owner, submit, settings):
    """A job whose extensions are being built on CPU holds no GPU yet: the status says how many are there, on the
    page and in its JSON, and none once they left the stage."""
    from leaderboard.jobs.models import EvaluationJob

    submission = submit(owner)
    client.force_login(owner)
    EvaluationJob.objects.filter(submission=submission).update(
        build_status=EvaluationJob.BUILDING, status=EvaluationJob.RUNNING
    )
    body = client.get(f"/submissions/{submission.pk}/status.json").json()
    assert body["jobs"]["building"] == 1 and body["jobs"]["running"] == 1 and not body["finished"]
    assert "1 of them building on CPU" in client.get(f"/submissions/{submission.pk}/").content.decode()
    EvaluationJob.objects.filter(submission=submission).update(
        build_status=EvaluationJob.BUILT, status=EvaluationJob.QUEUED
    )
    body = client.get(f"/submissions/{submission.pk}/status.json").json()
    assert body["jobs"]["building"] == 0 and body["jobs"]["queued"] == 1
    assert "building on CPU" not in client.get(f"/submissions/{submission.pk}/").content.decode()


def test_healthz_and_plotly_is_a_static_file(client, db):
    """plotly.js is collected with the site's static files (hashed, compressed, served by WhiteNoise: the browser
    test test_plots.py::test_static_files_compressed_and_cached checks the headers)."""
    from django.contrib.staticfiles import finders

    assert client.get("/healthz").content == b"ok"
    found = finders.find("vendor/plotly.min.js")
    assert found and b"plotly" in Path(found).read_bytes()[:2000].lower()
    assert [name for name, _ in finders.get_finder("leaderboard.staticfiles.PlotlyFinder").list([])] == [
        "plotly.min.js"
    ]


# --- query counts -----------------------------------------------------------------------------------------------------


def count_queries(client, url) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.parametrize(
    "url",
    [
        "/",
        "/leaderboard/cpu-gloo/?protocol=one_shot",
        "/problems/",
        "/problems/1_allreduce/",
        "/?format=csv",
        "/api/v1/leaderboard/cpu-gloo/",
    ],
)
def test_query_count_is_constant_as_data_grows(client, make_published, django_assert_num_queries, url):
    make_published(1)
    make_published(1, protocol="best_of_k")
    baseline = count_queries(client, url)
    make_published(4)
    make_published(3, protocol="best_of_k")
    with django_assert_num_queries(baseline):
        client.get(url)


def test_submission_page_query_count_does_not_grow_with_files(client, owner, submit, finish, django_assert_num_queries):
    small = submit(owner, {"1_allreduce_torch.py": GOOD_1})
    big = submit(
        owner,
        {
            "attempt_1/1_allreduce_torch.py": GOOD_1,
            "attempt_2/1_allreduce_torch.py": GOOD_1,
            "attempt_1/13_gemm_allreduce_torch.py": GOOD_13,
            "attempt_2/13_gemm_allreduce_torch.py": GOOD_13,
        },
        protocol="best_of_k",
        attempts=2,
    )
    for job in list(small.jobs.all()) + list(big.jobs.all()):
        finish(job, judge_document())
    client.force_login(owner)
    baseline = count_queries(client, small.get_absolute_url())
    with django_assert_num_queries(baseline):
        client.get(big.get_absolute_url())


def test_submission_page_says_why_an_interval_above_one_is_not_called_faster(client, owner, submit, finish):
    submission = submit(owner)
    document = judge_document()
    document["timing"].update(speedup=5.3, speedup_ci=[2.04, 7.55], faster=False, reference_blocks_spun_short=[1, 4])
    finish(submission.jobs.get(), document)
    client.force_login(owner)
    html = client.get(submission.get_absolute_url()).content.decode()
    assert "not called faster: in blocks [1, 4] most of the reference&#x27;s timed calls began before" in html


def test_submission_page_says_why_a_timing_was_flagged(client, owner, submit, finish):
    # The probe blocks at zero spin saw more than the candidate claimed (docs/threat-model.md, 4b): the page gives
    # the numbers beside the flag, so a reader can tell a probe flag from time outside the window.
    submission = submit(owner)
    document = judge_document()
    document["flags"] = ["timing_crosscheck"]
    document["timing"].update(
        faster=False,
        ranked=False,
        crosscheck={
            "suspect": True,
            "unexplained_ms": 0.01,
            "allowance_ms": 0.2,
            "probe": {"excess_ms": 1.13, "allowance_ms": 0.51, "suspect": True},
        },
    )
    finish(submission.jobs.get(), document)
    client.force_login(owner)
    html = client.get(submission.get_absolute_url()).content.decode()
    assert "with no spin the judge&#x27;s clock saw 1.13 ms a call more than the events claimed" in html
    assert "0.51 ms allowed" in html


def _sandbox(complete: bool) -> dict:
    summary = (
        "sandboxed: own uid 3000123, no network (loopback only), private filesystem view"
        if complete
        else "UNSANDBOXED (do not run code you do not trust this way): no private filesystem view: simulated"
    )
    return {"enabled": True, "complete": complete, "summary": summary, "user": "uid 3000123"}


@pytest.mark.parametrize("complete", [True, False])
def test_submission_page_says_in_one_line_whether_candidates_ran_sandboxed(client, owner, submit, finish, complete):
    submission = submit(owner)
    document = judge_document(flags=() if complete else ("unsandboxed",))
    document["environment"]["sandbox"] = _sandbox(complete)
    finish(submission.jobs.get(), document)
    client.force_login(owner)
    page = client.get(submission.get_absolute_url()).content.decode()
    line = page.split('id="sandbox-line">', 1)[1].split("</dd>", 1)[0]
    if complete:
        assert "sandboxed" in line and "unsandboxed" not in line
    else:
        assert "unsandboxed: do not upload code you do not trust" in line and "results unranked" in line
        assert "simulated" in line  # what was missing
    assert "&#x27;enabled&#x27;" not in page and "'enabled'" not in page  # no raw dump of the notes


def test_an_unsandboxed_correct_result_counts_on_an_unranked_profile_only(owner, submit, finish):
    submission = submit(owner)
    document = judge_document(flags=("unsandboxed",))
    document["environment"]["sandbox"] = _sandbox(False)
    finish(submission.jobs.get(), document)
    score = submission.scores.get(problem_id=1)
    assert not submission.profile.ranked and score.status == "correct" and not score.faster


def test_csv_exports_never_hand_a_spreadsheet_a_formula(client, owner, submit, finish):
    # A model name is the submitter's text; opened in a spreadsheet, "=HYPERLINK(...)" would be a live formula.
    submission = submit(owner, model='=HYPERLINK("http://evil.example","x")', agent="+cmd|' /C calc'!A0")
    finish(submission.jobs.get(), judge_document())
    submissions_services.submission_publish(submission, owner)
    rows = list(csv.DictReader(io.StringIO(client.get("/?format=csv").content.decode())))
    cells = [v for row in rows for v in row.values() if v]
    assert any("HYPERLINK" in v for v in cells)
    assert not any(v.startswith(("=", "+", "@")) for v in cells), cells
    assert (
        '=HYPERLINK(\\"http://evil.example\\",\\"x\\")' in client.get("/?format=json").content.decode()
    )  # JSON: as is
