"""What the site publishes shows nothing of the server: every public JSON, export, page and log of a published
submission is walked for absolute server paths and sandbox internals (box uid, /run/..., control group paths, the
scratch copy's path with its worker id and pid); staff still read the judge's document whole."""

import re
import tempfile

import pytest

from leaderboard.submissions import services as submissions_services
from tests.site.conftest import judge_document

SCRATCH = "/var/lib/pkb-arena/work/worker-gpu0-4711/job-12/run-1/submission/1_allreduce_torch.py"
CGROUP = "cgroup v1 (memory /sys/fs/cgroup/memory/pkb-arena/box-981)"
ROOTS = ("work", "run", "sys", "srv", "home", "tmp", "var", "proc", "opt", "root", "usr", "mnt", "data", "scratch")
SERVER_PATH = re.compile(rf"(?<![\w.~:/-])/(?:{'|'.join(ROOTS)})/[^\s\"'<>]*")
INTERNALS = re.compile(r"\buid \d{4,}|\b3000981\b|box-981|worker-gpu0-4711")


def served_document() -> dict:
    """A document shaped like the judge's own, with every kind of server detail it carries."""
    document = judge_document(verdict="correct")
    document["candidate"] = SCRATCH
    document["message"] = f"correct on 3 trials (built {SCRATCH})"
    document["environment"]["sandbox"] = {
        "enabled": True,
        "required": True,
        "complete": True,
        "box": {"id": 981, "uid": 3000981, "dir": "/run/pkb-arena/981", "cgroup": CGROUP},
        "cgroup": CGROUP,
        "user": "uid 3000981, no groups, no capabilities",
        "pid": "own pid namespace",
        "filesystem": "private view (bwrap): own scratch /var/lib/pkb-arena/work",
        "summary": "sandboxed: box 981 (uid 3000981), own control group (memory 16.0 GB)",
        "limits": {"memory_bytes": 1 << 34},
        "memory": {"peak_bytes": 1 << 28},
    }
    document["logs"][0]["stderr"] = (
        f'Traceback:\n  File "{SCRATCH}", line 3\n  File "{tempfile.gettempdir()}/pkb-scratch-4711/x.py", line 1\n'
    )
    return document


@pytest.fixture
def published(owner, submit, finish, gpu):
    submission = submit(owner, profile="gpu-h200x8")
    finish(submission.jobs.get(), served_document())
    submissions_services.submission_publish(submission, owner)
    return submission


def public_urls(submission) -> list[str]:
    result = submission.jobs.get().results.get()
    sid, stem, slug = submission.pk, "1_allreduce", "gpu-h200x8"
    pages = [
        f"/submissions/{sid}/",
        f"/results/{result.pk}/",
        f"/problems/{stem}/?profile={slug}",
        f"/leaderboard/{slug}/",
    ]
    documents = [f"/results/{result.pk}.json", f"/results/{result.pk}/logs", f"/submissions/{sid}/status.json"]
    exports = [
        f"{url}?format={fmt}"
        for url in (f"/leaderboard/{slug}/", "/problems/", f"/problems/{stem}/", f"/submissions/{sid}/", "/audits/")
        for fmt in ("json", "csv")
    ]
    api = [
        f"/api/v1/submissions/{sid}/",
        f"/api/v1/submissions/{sid}/status/",
        f"/api/v1/leaderboard/{slug}/",
        f"/api/v1/problems/{stem}/?profile={slug}",
        "/api/v1/problems/",
        "/api/v1/audits/",
    ]
    return pages + documents + exports + api


def test_no_public_page_json_or_export_carries_a_server_path(published, client):
    walked = 0
    for url in public_urls(published):
        response = client.get(url.replace("/?format", "/?profile=gpu-h200x8&format") if "problems/?" in url else url)
        assert response.status_code == 200, url
        body = response.content.decode()
        assert not SERVER_PATH.findall(body), (url, SERVER_PATH.findall(body)[:3])
        assert not INTERNALS.findall(body), (url, INTERNALS.findall(body)[:3])
        walked += 1
    assert walked == len(public_urls(published)) >= 20


def test_the_result_json_names_the_file_inside_the_submission_and_keeps_what_the_sandbox_enforced(published, client):
    result = published.jobs.get().results.get()
    public = client.get(f"/results/{result.pk}.json").json()
    assert public["candidate"] == "1_allreduce_torch.py"
    sandbox = public["environment"]["sandbox"]
    assert sandbox["complete"] is True and sandbox["limits"] == {"memory_bytes": 1 << 34}
    assert not {"box", "cgroup", "user", "filesystem"} & set(sandbox)
    assert sandbox["summary"] == "sandboxed: own control group (memory 16.0 GB)"


def test_staff_read_the_document_whole(published, client, staff):
    client.force_login(staff)
    result = published.jobs.get().results.get()
    document = client.get(f"/results/{result.pk}.json").json()
    assert document["candidate"] == SCRATCH and document["environment"]["sandbox"]["box"]["uid"] == 3000981


def test_the_path_check_sees_what_it_looks_for():
    caught = SERVER_PATH.findall(f'"candidate": "{SCRATCH}", "u": "/submissions/1/", "x": "http://h/run/3"')
    assert caught == [SCRATCH + ""] and INTERNALS.findall(served_document()["environment"]["sandbox"]["user"])
