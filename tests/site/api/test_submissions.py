"""POST /api/v1/submissions/ and friends: token auth and scopes, every bad-upload case (nothing stored), quota."""

import pytest
from rest_framework.test import APIClient

from leaderboard.accounts import services as accounts_services
from leaderboard.accounts.models import QuotaCharge
from leaderboard.jobs.models import EvaluationJob
from leaderboard.submissions.models import Candidate, Submission
from tests.site.conftest import GOOD_1, GOOD_13, zip_bytes

URL = "/api/v1/submissions/"
FIELDS = {"model": "m", "protocol": "one_shot", "attempts": "1", "profile": "cpu-gloo"}


@pytest.fixture
def api(owner, cpu):
    _, raw = accounts_services.token_create(owner.submitter, "test", ["read", "submit"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def archive(files, name="run.zip"):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, zip_bytes(files), content_type="application/zip")


def post(api, files=None, **fields):
    data = {**FIELDS, **fields}
    data = {k: v for k, v in data.items() if v is not None}
    data["archive"] = archive(files or {"1_allreduce_torch.py": GOOD_1})
    return api.post(URL, data, format="multipart")


def nothing_stored():
    return not (
        Submission.objects.exists()
        or Candidate.objects.exists()
        or EvaluationJob.objects.exists()
        or QuotaCharge.objects.exists()
    )


def test_upload_archive(api):
    response = post(
        api,
        {
            "attempt_1/1_allreduce_torch.py": GOOD_1,
            "attempt_2/1_allreduce_torch.py": GOOD_1,
            "attempt_1/13_gemm_allreduce_torch.py": GOOD_13,
        },
        protocol="best_of_k",
        attempts="2",
        tokens="1000",
        dollars="1.5",
        publish="true",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["jobs"] == 3 and body["visibility"] == "public" and body["attempts_k"] == 2
    assert body["url"].endswith(f"/submissions/{body['id']}/")
    assert body["reported_tokens"] == 1000 and body["reported_dollars"] == "1.50"


def test_upload_directory_files_with_paths(api):
    from django.core.files.uploadedfile import SimpleUploadedFile

    files = [SimpleUploadedFile("1_allreduce_torch.py", GOOD_1), SimpleUploadedFile("1_allreduce_torch.py", GOOD_1)]
    data = {
        **FIELDS,
        "protocol": "best_of_k",
        "attempts": "2",
        "files": files,
        "paths": '["attempt_1/1_allreduce_torch.py", "attempt_2/1_allreduce_torch.py"]',
    }
    response = api.post(URL, data, format="multipart")
    assert response.status_code == 201, response.json()
    assert sorted(Candidate.objects.values_list("attempt", flat=True)) == [1, 2]


BAD = [
    ("unknown problem", {"1_allreduse_torch.py": GOOD_1}, {}, "unknown_problem", "1_allreduse_torch.py"),
    (
        "duplicate",
        {"1_allreduce_torch.py": GOOD_1, "1_allreduce_cuda.py": GOOD_1},
        {"backend": "mixed"},
        "duplicate",
        "1_allreduce_cuda.py",
    ),
    ("file over size", {"1_allreduce_torch.py": b"#" * (512 * 1024 + 1)}, {}, "over_size", "1_allreduce_torch.py"),
    ("path escaping", {"../1_allreduce_torch.py": GOOD_1}, {}, "path_escapes_folder", "../1_allreduce_torch.py"),
    ("non-UTF-8", {"1_allreduce_torch.py": b"\xff\xfe\x00"}, {}, "not_utf8", "1_allreduce_torch.py"),
    ("missing model", {"1_allreduce_torch.py": GOOD_1}, {"model": None}, "missing_metadata", "(metadata)"),
    ("missing protocol", {"1_allreduce_torch.py": GOOD_1}, {"protocol": None}, "missing_metadata", "(metadata)"),
    ("missing profile", {"1_allreduce_torch.py": GOOD_1}, {"profile": None}, "missing_metadata", "(metadata)"),
    (
        "over budget",
        {"attempt_1/1_allreduce_torch.py": GOOD_1, "attempt_2/1_allreduce_torch.py": GOOD_1},
        {"protocol": "best_of_k", "attempts": "1"},
        "over_budget",
        "attempt_2/1_allreduce_torch.py",
    ),
    (
        "bad layout",
        {"1_allreduce_torch.py": GOOD_1, "attempt_2/1_allreduce_torch.py": GOOD_1},
        {},
        "bad_layout",
        "1_allreduce_torch.py",
    ),
    (
        "unsupported backend",
        {"1_allreduce_pk.py": b"from utils.parallelkittens_runtime import *\n" + GOOD_1},
        {"backend": "pk"},
        "unsupported_backend",
        "1_allreduce_pk.py",
    ),
]


@pytest.mark.parametrize("case, files, fields, rule, file", BAD, ids=[b[0] for b in BAD])
def test_bad_upload_is_refused_naming_file_and_rule(api, case, files, fields, rule, file):
    response = post(api, files, **fields)
    assert response.status_code == 400
    body = response.json()
    assert {"file": file, "rule": rule} in [{"file": e["file"], "rule": e["rule"]} for e in body["errors"]]
    assert "nothing was stored" in body["detail"]
    assert nothing_stored()


def test_upload_over_total_size_is_refused(api, settings):
    settings.PKB_MAX_UPLOAD_BYTES = 2048
    response = post(
        api, {f"attempt_{i}/1_allreduce_torch.py": b"#" * 1000 for i in range(1, 4)}, protocol="best_of_k", attempts="3"
    )
    assert response.status_code == 400 and response.json()["errors"][0]["rule"] == "over_size"
    assert nothing_stored()


def test_zip_with_symlink_is_refused(api):
    import io
    import zipfile

    from django.core.files.uploadedfile import SimpleUploadedFile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        info = zipfile.ZipInfo("1_allreduce_torch.py")
        info.external_attr = 0o120777 << 16
        z.writestr(info, "/etc/passwd")
    response = api.post(URL, {**FIELDS, "archive": SimpleUploadedFile("x.zip", buffer.getvalue())}, format="multipart")
    assert response.status_code == 400 and response.json()["errors"][0]["rule"] == "not_a_regular_file"
    assert nothing_stored()


def test_quota_refusal_is_429_with_next_slot(api, owner):
    owner.submitter.quota_daily = 1
    owner.submitter.save()
    assert post(api).status_code == 201
    response = post(api)
    assert response.status_code == 429
    assert response.json()["errors"][0]["rule"] == "quota" and response.json()["next_free_at"]
    assert Submission.objects.count() == 1


def test_no_token_no_upload(cpu):
    response = APIClient().post(
        URL, {**FIELDS, "archive": archive({"1_allreduce_torch.py": GOOD_1})}, format="multipart"
    )
    assert response.status_code in (401, 403)


def test_bad_token_is_401(cpu):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer pkb_00000000_nope")
    assert client.get(URL).status_code == 401


def test_read_only_token_cannot_upload(owner, cpu):
    _, raw = accounts_services.token_create(owner.submitter, "ro", ["read"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get(URL).status_code == 200
    response = client.post(URL, {**FIELDS, "archive": archive({"1_allreduce_torch.py": GOOD_1})}, format="multipart")
    assert response.status_code == 403 and nothing_stored()


def test_private_submission_is_404_for_others(api, outsider):
    sid = post(api).json()["id"]
    assert api.get(f"{URL}{sid}/").status_code == 200
    other = APIClient()
    other.force_authenticate(outsider)
    assert other.get(f"{URL}{sid}/").status_code == 404
    assert APIClient().get(f"{URL}{sid}/status/").status_code == 404


def test_publish_and_rerun(api, outsider):
    sid = post(api).json()["id"]
    assert api.post(f"{URL}{sid}/publish/").json()["visibility"] == "public"
    assert APIClient().get(f"{URL}{sid}/").status_code == 200
    other = APIClient()
    other.force_authenticate(outsider)
    assert other.post(f"{URL}{sid}/publish/").status_code == 403
    assert other.post(f"{URL}{sid}/rerun/").status_code == 403
    assert api.post(f"{URL}{sid}/rerun/").json() == {"queued": 0}  # nothing finished yet


def test_status_and_me(api):
    sid = post(api).json()["id"]
    status = api.get(f"{URL}{sid}/status/").json()
    assert status["jobs"]["queued"] == 1 and not status["finished"]
    me = api.get("/api/v1/me/").json()
    assert me["quota"]["usage"]["concurrent"] == 1
