"""Issue 35: the getting-started and "Exploits we catch" pages, the reference download, and the site's defects
(each test failed before its fix): /leaderboard/, the problem page's catalogue value, speed of light at the
profile's W and sorting, a pending submission's actions and sandbox line, log pages, the duplicate message, the
OpenAPI schema."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from leaderboard.submissions import services as submissions_services
from tests.site.conftest import GOOD_1, judge_document

ROOT = Path(__file__).resolve().parents[3]


# --- getting started, README -----------------------------------------------------------------------------------------


def test_getting_started_is_linked_from_the_nav_and_says_what_a_newcomer_needs(client, cpu):
    home = client.get("/").content.decode()
    assert 'id="nav-getting-started"' in home and 'href="/getting-started/"' in home
    page = client.get("/getting-started/").content.decode()
    for needed in (
        "One file per problem",
        "submission.json",
        "attempt_1/",
        "one-shot",
        "best-of-k",
        "k = 1",
        "Correct (of 87)",
        "Faster (of 87)",
        "fast<sub>p</sub>",
        "Peak fraction",
        "Geomean speedup",
        ".venv/bin/pkb eval",
        "download the reference as a starting candidate",
        ".jsonl",
    ):
        assert needed in page, needed
    assert 'href="/problems/1_allreduce/reference.py"' in page


def test_the_readme_starts_with_how_to_submit():
    readme = (ROOT / "README.md").read_text()
    opening = readme[: readme.index("\n## ", readme.index("\n## ") + 1)]  # the title and the first section
    assert "/getting-started/" in opening and ".venv/bin/pkb" in opening and "pkb submit" in opening
    assert readme.index(".venv/bin/pkb") < readme.index("### Protocol")  # how to submit before the internals


def test_the_reference_download_is_a_correct_starting_candidate(client, cpu, tmp_path):
    response = client.get("/problems/1_allreduce/reference.py")
    assert response.status_code == 200 and 'filename="1_allreduce_torch.py"' in response["Content-Disposition"]
    code = response.content.decode()
    assert "def solution(" in code and "pkb eval 1 1_allreduce_torch.py" in code
    path = tmp_path / "1_allreduce_torch.py"
    path.write_text(code)
    # The real judge on CPU ranks takes it as it is: correct.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluator.cli",
            "eval",
            "1",
            str(path),
            "--world-size",
            "2",
            "--device",
            "cpu",
            "--trials",
            "1",
            "--M",
            "64",
            "--N",
            "32",
            "--json",
            str(tmp_path / "r"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert '"verdict": "correct"' in (tmp_path / "r").read_text()
    assert client.get("/problems/2/reference.py").status_code == 404  # not implemented in this test catalogue


# --- exploits we catch -----------------------------------------------------------------------------------------------


def test_the_exploits_data_is_generated_from_the_red_team_suite_and_up_to_date():
    from leaderboard.pages import exploits

    built = exploits.build(ROOT / "tests" / "redteam")
    assert exploits.DATA.read_text() == exploits.dumps(built), "run: manage.py build_exploits"
    names = {e["test"] for s in built["sections"] for e in s["entries"]}
    on_disk = {
        f"{p.name}::{m}"
        for p in (ROOT / "tests" / "redteam").glob("test_*.py")
        for m in re.findall(r"^def (test_\w+)", p.read_text(), re.MULTILINE)
    }
    assert names == on_disk and built["tests"] == len(on_disk)


def test_the_exploits_page_lists_the_tricks_and_how_without_their_code(client, db):
    from leaderboard.pages import exploits

    html = client.get("/exploits/").content.decode()
    data = exploits.load()
    assert data["tests"] > 50 and html.count("<li data-test=") == data["tests"]
    assert "Cache by pointer" in html or "cache_by_pointer" in html
    assert "Timing tricks" in html
    for code_sign in ("def solution", "import torch", "torch.distributed.all_reduce("):
        assert code_sign not in html


# --- defects ---------------------------------------------------------------------------------------------------------


def test_leaderboard_without_a_profile_is_the_default_board(client, cpu):
    response = client.get("/leaderboard/")
    assert response.status_code == 302 and response["Location"] == "/leaderboard/cpu-gloo/"


def test_problem_page_names_the_catalogue_value_in_words(client, catalogue):
    from leaderboard.catalogue.models import Problem

    raw = Problem.objects.filter(parallelism__startswith="none-collective").first()
    html = client.get(f"/problems/{raw.stem}/").content.decode()
    shown = re.search(r'<span id="parallelism">(.*?)</span>', html).group(1)
    assert "none-collective" not in shown and "no model-parallel scheme" in shown


def test_the_speed_of_light_line_is_at_the_profile_s_world_size(client, cpu, gpu):
    w2 = client.get("/problems/1_allreduce/?profile=cpu-gloo").content.decode()
    line = re.search(r'<dd id="light">(.*?)</dd>', w2, re.S).group(1)
    assert "No floor at W = 2" in line and "W = 8 only" in line and "moved and" not in line
    w8 = client.get("/problems/1_allreduce/?profile=gpu-h200x8").content.decode()
    line = re.search(r'<dd id="light">(.*?)</dd>', w8, re.S).group(1)
    assert "moved and" in line and "at W = 8" in line


def test_problem_page_rows_are_sorted_by_speedup(owner, submit, finish, client):
    for speedup in (1.1, 3.0, 0.5, 2.0):
        s = submit(owner, model=f"run-{speedup}")
        finish(s.jobs.get(), judge_document(speedup=speedup, lo=speedup * 0.9, hi=speedup * 1.1, faster=speedup > 1.2))
        submissions_services.submission_publish(s, owner)
    s = submit(owner, model="run-wrong")
    finish(s.jobs.get(), judge_document(verdict="incorrect"))
    submissions_services.submission_publish(s, owner)
    html = client.get("/problems/1_allreduce/").content.decode()
    order = re.findall(r"run-([\d.]+|wrong)</a>", html)
    assert order == ["3.0", "2.0", "1.1", "0.5", "wrong"], order


def test_a_pending_submission_offers_no_rerun_of_failures_and_says_it_is_not_judged_yet(owner, submit, client):
    submission = submit(owner)
    client.force_login(owner)
    html = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "Re-run platform failures" not in html
    sandbox = re.search(r'<dd id="sandbox-line">(.*?)</dd>', html, re.S).group(1)
    assert "not judged yet" in sandbox and "not recorded" not in sandbox


def test_rerun_of_failures_is_offered_when_there_are_some(owner, submit, client, settings):
    from leaderboard.jobs import services as jobs_services

    settings.PKB_JOB_MAX_ATTEMPTS = 1
    submission = submit(owner)
    job = submission.jobs.get()
    job.max_attempts = 1
    job.save()
    jobs_services.job_claim(job.pk, "w")
    jobs_services.job_infra_error(job.pk, "w", "lost")
    client.force_login(owner)
    assert "Re-run platform failures (1)" in client.get(f"/submissions/{submission.pk}/").content.decode()


LOG = """[W1204 18:03:13.1 socket.cpp:752] [c10d] The hostname of the client socket cannot be retrieved. err=-3
Traceback (most recent call last):
  File "/srv/pkb-arena/evaluator/rank/worker.py", line 88, in main
  File "/srv/pkb-arena/.venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 2, in f
  File "/var/pkb/work/w1/job-9/cand/1_allreduce_torch.py", line 5, in solution
ValueError: boom
"""


def test_published_logs_show_no_server_paths_and_no_c10d_noise(owner, submit, finish, client):
    submission = submit(owner)
    doc = judge_document(verdict="runtime_error")
    doc["logs"] = [{"role": "candidate", "rank": 0, "stdout": "", "stderr": LOG}]
    result = finish(submission.jobs.get(), doc)
    submissions_services.submission_publish(submission, owner)
    for url in (f"/results/{result.pk}/", f"/results/{result.pk}/logs", f"/results/{result.pk}.json"):
        text = client.get(url).content.decode()
        assert "/srv/" not in text and "/var/pkb" not in text and "site-packages" not in text, url
        assert "cannot be retrieved" not in text, url
        assert "evaluator/rank/worker.py" in text and "1_allreduce_torch.py" in text and "ValueError: boom" in text
    assert "/srv/pkb-arena" in str(result.document)  # the stored document stays as the judge wrote it


def test_the_duplicate_message_names_the_earlier_upload_once(owner, submit, client):
    first = submit(owner)
    client.force_login(owner)
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = client.post(
        "/submit/",
        {
            "model": "m",
            "protocol": "one_shot",
            "profile": "cpu-gloo",
            "files": [SimpleUploadedFile("1_allreduce_torch.py", GOOD_1)],
            "paths": '["1_allreduce_torch.py"]',
        },
    )
    html = response.content.decode()
    item = re.search(r'<div class="errors".*?<li>(.*?)</li>', html, re.S).group(1)
    assert item.count(f"/submissions/{first.pk}/") == 1  # the link's href, not the path in the sentence too
    assert f"#{first.pk}" in item and "again. <span" in item and ">open it</a>" in item


def test_one_shot_from_the_form_with_no_attempt_budget_is_accepted(owner, cpu, client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(owner)
    response = client.post(
        "/submit/",
        {
            "model": "m",
            "protocol": "one_shot",
            "profile": "cpu-gloo",
            "attempts": "",
            "archive": SimpleUploadedFile("run.zip", _zip({"1_allreduce_torch.py": GOOD_1})),
        },
    )
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert owner.submitter.submissions.get().attempts_k == 1


def _zip(files):
    from tests.site.conftest import zip_bytes

    return zip_bytes(files)


def test_the_openapi_schema_generates_with_warnings_as_errors(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "spectacular",
            "--validate",
            "--fail-on-warn",
            "--file",
            str(tmp_path / "schema.yml"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**__import__("os").environ, "DJANGO_SETTINGS_MODULE": "leaderboard.settings_test"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    schema = (tmp_path / "schema.yml").read_text()
    for component in ("Me:", "SubmissionStatus:", "RerunResponse:", "ProblemDetailResponse:", "Audit:"):
        assert component in schema, component
    assert schema.count("operationId: feedback_sessions_retrieve") == 1 and "feedback_sessions_list" in schema
