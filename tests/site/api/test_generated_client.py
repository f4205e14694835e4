"""A client generated from the served schema works: openapi-python-client turns GET /api/v1/schema/ into a Python
package (no Java, no network beyond the live test server), and every call below goes through that generated code
against a live server: reads, a multipart upload with a token, the submission's detail, a PATCH of its metadata,
publishing, the leaderboard row, and the 401 of a write without a token. The generator's own errors (an operation
or model it had to skip) fail the test, and so does a response that the generated models cannot parse or that
carries a field the schema does not declare."""

from __future__ import annotations

import importlib
import io
import json
import sys
import urllib.request

import pytest

from leaderboard.accounts import services as accounts_services
from tests.site.conftest import GOOD_1, judge_document

pytestmark = pytest.mark.django_db(transaction=True)

PACKAGE = "pkb_generated_client"


@pytest.fixture
def generated(live_server, tmp_path):
    """The client package, generated into tmp_path from the schema as the live server serves it, and imported."""
    from openapi_python_client import generate
    from openapi_python_client.config import Config, ConfigFile, MetaType

    with urllib.request.urlopen(f"{live_server.url}/api/v1/schema/?format=json", timeout=30) as response:
        (tmp_path / "schema.json").write_bytes(response.read())
    # post_hooks=[]: the generator's default hooks run ruff over the output (formatting only), not needed to import it.
    config = Config.from_sources(
        ConfigFile(project_name_override=PACKAGE, package_name_override=PACKAGE, post_hooks=[]),
        MetaType.NONE,
        tmp_path / "schema.json",
        "utf-8",
        False,
        tmp_path / PACKAGE,
    )
    problems = generate(config=config)
    assert not problems, "\n".join(f"{p.level}: {p.header}: {p.detail}" for p in problems)
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def undeclared(value, where="response") -> list[str]:
    """Fields of a parsed response that its model does not declare (the generated models keep them aside in
    ``additional_properties``); models that are maps by declaration (no fields of their own) are maps, not drift."""
    import attrs

    found = []
    if attrs.has(type(value)):
        declared = [f.name for f in attrs.fields(type(value)) if f.name != "additional_properties"]
        extra = getattr(value, "additional_properties", {})
        if declared and extra:
            found.append(f"{where} ({type(value).__name__}): {sorted(extra)}")
        for name in declared:
            found += undeclared(getattr(value, name), f"{where}.{name}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += undeclared(item, f"{where}[{index}]")
    return found


def test_a_client_generated_from_the_schema_works_against_a_live_server(generated, live_server, owner, cpu, finish):
    def api(name):
        return importlib.import_module(f"{PACKAGE}.api.{name}")

    models = importlib.import_module(f"{PACKAGE}.models")
    File = importlib.import_module(f"{PACKAGE}.types").File
    token = accounts_services.token_create(owner.submitter, "generated", ["read", "submit"])[1]
    # raise_on_unexpected_status: a status the schema does not declare for an operation raises in the client.
    anonymous = generated.Client(base_url=live_server.url, raise_on_unexpected_status=True)
    client = generated.AuthenticatedClient(base_url=live_server.url, token=token, raise_on_unexpected_status=True)

    def parsed(response, status, model):
        assert response.status_code == status, response.content[:500]
        assert isinstance(response.parsed, model), (type(response.parsed), response.content[:500])
        assert not undeclared(response.parsed), undeclared(response.parsed)
        return response.parsed

    profiles = api("profiles.profiles_list").sync_detailed(client=anonymous)
    assert profiles.status_code == 200 and all(isinstance(p, models.Profile) for p in profiles.parsed)
    assert not undeclared(profiles.parsed)
    assert {"cpu-gloo", "gpu-h200x8"} <= {p.slug for p in profiles.parsed}
    problems = api("problems.problems_list").sync_detailed(client=anonymous, profile="cpu-gloo")
    assert problems.status_code == 200 and all(isinstance(p, models.Problem) for p in problems.parsed)
    assert not undeclared(problems.parsed)
    assert {p.stem for p in problems.parsed if p.id == 1} == {"1_allreduce"}
    board = parsed(
        api("leaderboard.leaderboard_retrieve").sync_detailed("cpu-gloo", client=anonymous),
        200,
        models.LeaderboardResponse,
    )
    assert board.profile == "cpu-gloo" and board.ranked_profile is False
    assert all(section.entries == [] for section in board.sections)

    def upload():
        return models.UploadRequest(
            files=[File(payload=io.BytesIO(GOOD_1), file_name="1_allreduce_torch.py")],
            paths=json.dumps(["1_allreduce_torch.py"]),
            model="generated-model",
            protocol="one_shot",
            attempts=1,
            profile="cpu-gloo",
            agent="harness",
            agent_version="1.0",
        )

    create = api("submissions.submissions_create")
    refused = parsed(create.sync_detailed(client=anonymous, body=upload()), 401, models.Error)
    assert refused.detail
    created = parsed(create.sync_detailed(client=client, body=upload()), 201, models.SubmissionCreated)
    assert created.model_name == "generated-model" and created.jobs == 1 and created.profile == "cpu-gloo"

    detail = api("submissions.submissions_retrieve")
    queued = parsed(detail.sync_detailed(str(created.id), client=client), 200, models.SubmissionDetailResponse)
    assert queued.editable is True and queued.status.jobs.queued == 1 and queued.status.finished is False

    from leaderboard.submissions.models import Submission

    finish(Submission.objects.get(pk=created.id).jobs.get(), judge_document(speedup=1.3, lo=1.1, hi=1.5))
    judged = parsed(detail.sync_detailed(str(created.id), client=client), 200, models.SubmissionDetailResponse)
    assert judged.status.finished is True and judged.status.jobs.done == 1 and judged.status.entry.correct == 1
    assert [(f.file, f.verdict) for f in judged.status.files] == [("1_allreduce_torch.py", "correct")]
    [score] = judged.scores
    assert score.status == "correct" and score.correct is True and score.speedup_lo == pytest.approx(1.1)

    patch = api("submissions.submissions_partial_update")
    corrected = parsed(
        patch.sync_detailed(
            str(created.id), client=client, body=models.PatchedMetadataPatchRequest(model="fixed-model", label="v2")
        ),
        200,
        models.MetadataPatchResponse,
    )
    assert sorted(corrected.changed) == ["label", "model_name"] and corrected.submission.model_name == "fixed-model"
    assert [sorted(change.changes.additional_properties) for change in corrected.history] == [["label", "model_name"]]
    no_token = patch.sync_detailed(
        str(created.id), client=anonymous, body=models.PatchedMetadataPatchRequest(model="stolen")
    )
    assert no_token.status_code == 401 and Submission.objects.get(pk=created.id).model_name == "fixed-model"

    published = parsed(
        api("submissions.submissions_publish_create").sync_detailed(str(created.id), client=client),
        200,
        models.Submission,
    )
    assert published.visibility == models.VisibilityEnum.PUBLIC
    board = parsed(
        api("leaderboard.leaderboard_retrieve").sync_detailed("cpu-gloo", client=anonymous),
        200,
        models.LeaderboardResponse,
    )
    [entry] = [entry for section in board.sections for entry in section.entries]
    assert entry.submission.id == created.id and entry.submission.model_name == "fixed-model" and entry.correct == 1
