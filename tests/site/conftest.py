"""Shared fixtures of the site tests: named users (owner, outsider, staff) so access rules read like sentences,
the problem catalogue, hardware profiles, and helpers that build uploads."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

CANDIDATES = Path(__file__).parent / "candidates"
GOOD_1 = (CANDIDATES / "1_allreduce_torch.py").read_bytes()
WRONG_1 = (CANDIDATES / "wrong" / "1_allreduce_torch.py").read_bytes()
GOOD_13 = b"import torch\n\ndef solution(A_local, B_local):\n    return A_local @ B_local\n"


@pytest.fixture(scope="session")
def small_registry():
    """Problems 1 and 13 from the real registry (the site treats every other catalogue entry as not implemented)."""
    import problems

    return {1: problems.get(1), 13: problems.get(13)}


@pytest.fixture
def catalogue(db, small_registry):
    import problems
    from leaderboard.catalogue import services as catalogue_services

    catalogue_services.profiles_ensure_defaults()
    catalogue_services.problems_load(problems.catalogue(), small_registry)


@pytest.fixture
def cpu(catalogue):
    from leaderboard.catalogue.models import HardwareProfile

    return HardwareProfile.objects.get(slug="cpu-gloo")


@pytest.fixture
def gpu(catalogue):
    from leaderboard.catalogue.models import HardwareProfile

    profile = HardwareProfile.objects.get(slug="gpu-h200x8")
    profile.accepting = True
    profile.save()
    return profile


def _user(django_user_model, name, **extra):
    from leaderboard.accounts import services as accounts_services

    user = django_user_model.objects.create_user(username=name, password="pw-" + name, **extra)
    accounts_services.submitter_for(user)
    return user


@pytest.fixture
def owner(db, django_user_model):
    return _user(django_user_model, "alice")


@pytest.fixture
def outsider(db, django_user_model):
    return _user(django_user_model, "mallory")


@pytest.fixture
def staff(db, django_user_model):
    return _user(django_user_model, "sam", is_staff=True, is_superuser=True)


def zip_bytes(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def meta(**changes) -> dict:
    fields = {
        "model": "test-model",
        "protocol": "one_shot",
        "attempts": 1,
        "profile": "cpu-gloo",
        "agent": "harness",
        "agent_version": "1.0",
    }
    fields.update(changes)
    return {k: v for k, v in fields.items() if v is not None}


@pytest.fixture
def submit(cpu):
    """submit(user, files={path: bytes}, **metadata) -> Submission, through the real service."""
    from leaderboard.submissions import services as submissions_services

    def make(user, files=None, allow_duplicate=True, **changes):
        # Set-ups build several submissions from the same files; the refusal of identical re-uploads is tested with
        # allow_duplicate=False (tests/site/services/test_owner_control.py).
        files = files if files is not None else {"1_allreduce_torch.py": GOOD_1}
        return submissions_services.submission_create(
            user.submitter, meta(**changes), list(files.items()), allow_duplicate=allow_duplicate
        )

    return make


def judge_document(verdict="correct", speedup=1.3, lo=1.1, hi=1.5, faster=True, flags=()):
    """A document shaped like the judge's, for tests of storage and aggregation only (never shown as a verdict of a
    real candidate: the tests that judge code run the real judge)."""
    timing = None
    if verdict == "correct":  # "faster" as the judge decides it (evaluator/contract/verdict.py): never with a flag
        timing = {
            "reference_ms": 1.3,
            "candidate_ms": 1.0,
            "speedup": speedup,
            "speedup_ci": [lo, hi],
            "faster": bool(faster and not flags),
            "samples": 10,
            "ranked": False,
            "method": "wall_clock",
        }
    return {
        "schema": 1,
        "verdict": verdict,
        "message": f"{verdict} (test document)",
        "flags": list(flags),
        "trials": [],
        "timing": timing,
        "environment": {"host": "test", "backend": "gloo"},
        "logs": [{"role": "candidate", "rank": 0, "stdout": "", "stderr": "secret log line"}],
        "wall_s": 2.0,
    }


@pytest.fixture
def finish():
    """finish(job, document): claim the job as a worker would and store the document."""
    from leaderboard.jobs import services as jobs_services

    def run(job, document):
        claimed = jobs_services.job_claim(job.pk, "test-worker")
        assert claimed is not None, f"job {job.pk} could not be claimed"
        return jobs_services.job_finish(job.pk, "test-worker", document)

    return run


# Every API response of these tests is checked against the served schema (autouse, session-wide).
from tests.site.api.schema_check import api_responses_match_the_schema  # noqa: E402,F401
