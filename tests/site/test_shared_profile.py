"""The gpu-shared-w8 profile (docs/site.md, "Shared-device worlds"): one GPU shared by W = 8 ranks, unranked, its own
queue; its jobs' judge requests (shared, never timed, hidden world size 2 or 4, never on the warm judge); a worker
pinned to one GPU serves it; and its results, as the judge labels them, count as Correct and never rank or count as
faster through the real scoring rows."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

import problems
from evaluator.contract import schema, verdict
from evaluator.judge import hidden_world, shared_device
from leaderboard.catalogue.models import HardwareProfile
from leaderboard.jobs import judge_service, runner
from leaderboard.jobs.models import Result
from leaderboard.scoring.models import LeaderboardEntry
from leaderboard.submissions import services as submissions_services
from tests.site.conftest import GOOD_1
from tests.site.test_worker_pinning import boot, host  # noqa: F401 - fixtures: a worker booted on stand-in GPUs

SLUG = "gpu-shared-w8"


@pytest.fixture
def shared(catalogue):
    profile = HardwareProfile.objects.get(slug=SLUG)
    profile.accepting = True  # created closed, as every GPU profile: staff open it
    profile.save()
    return profile


@pytest.fixture
def job(shared, owner):
    from tests.site.conftest import meta

    submission = submissions_services.submission_create(
        owner.submitter, meta(profile=SLUG), [("1_allreduce_torch.py", GOOD_1)], allow_duplicate=True
    )
    return submission.jobs.get()


def test_the_profile_is_one_gpu_shared_by_eight_unranked_ranks_with_its_own_queue(catalogue):
    profile = HardwareProfile.objects.get(slug=SLUG)
    assert (profile.device, profile.world_size, profile.ranked, profile.shared_device) == ("cuda", 8, False, True)
    assert profile.queue_name == SLUG and not profile.accepting and not profile.nvlink
    assert not HardwareProfile.objects.filter(shared_device=True).exclude(slug=SLUG).exists()


def test_a_shared_profile_cannot_be_made_ranked(catalogue):
    profile = HardwareProfile.objects.get(slug=SLUG)
    profile.ranked = True
    with pytest.raises(ValidationError, match="never ranked"):
        profile.full_clean()


def test_its_jobs_ask_the_judge_for_a_shared_world_never_timed_with_a_hidden_world_of_2_or_4(job, settings):
    settings.PKB_HIDDEN_CHECKS = True
    request = runner.judge_request(job, Path("/tmp/c.py"), Path("/tmp/r.json"))
    assert request.shared_device and not request.timing and request.pairs == 1
    assert request.world_size == 8 and request.device == "cuda"
    assert {"--shared-device", "--no-timing"} <= set(request.argv())
    assert request.hidden_world_size == "auto"  # the judge draws it: 2 or 4 in a shared world
    problem = problems.get(job.candidate.problem.stem)
    drawn = {hidden_world.draw(problem, request.world_size, request.device, request.shared_device) for _ in range(40)}
    assert drawn == {2, 4}


def test_its_jobs_never_go_to_the_warm_judge(job, monkeypatch):
    request = runner.judge_request(job, Path("/tmp/c.py"), Path("/tmp/r.json"))
    monkeypatch.setattr(judge_service, "for_thread", lambda *a: pytest.fail("a shared world on the warm judge"))
    monkeypatch.setattr(judge_service.judge_process, "supervise", lambda command, *a: ("exited", command))
    assert judge_service.launch(request, Path("/tmp"), None, 0.0, "job", warm_spares=2) == ("exited", request.command())


def test_a_worker_pinned_to_one_gpu_serves_it_and_not_the_eight_gpu_profile(boot, host, monkeypatch):  # noqa: F811
    from leaderboard.jobs import host_gate

    monkeypatch.setenv("FAKE_SMI_GPUS", "1")
    with pytest.raises(host_gate.HostDoesNotMatchProfile, match="one GPU each"):
        boot("0", ["gpu-h200x8"])  # refused, it holds no GPU
    _, middleware = boot("0", [SLUG, f"feedback-{SLUG}"])
    assert middleware.gpu_locks.devices == [0]


def _judged_shared_document() -> dict:
    """What the judge's own ending makes of a shared world's correct attempt whose ranks reported a timing that would
    rank: its label, then THE decision (evaluator/judge/shared_device.py, evaluator/contract/verdict.py)."""
    document = {
        "schema": 1,
        "verdict": schema.CORRECT,
        "message": "",
        "flags": [],
        "trials": [],
        "logs": [],
        "environment": {"backend": "gloo"},
        "wall_s": 3.0,
        "timing": {
            "speedup": 2.0,
            "speedup_ci": [1.8, 2.2],
            "reference_ms": 2.0,
            "candidate_ms": 1.0,
            "method": "cuda_events",
        },
    }
    shared_device.label(document, True)
    return verdict.conclude(document, "cuda")


def test_a_shared_result_counts_correct_and_never_ranks_or_counts_faster(job, finish, owner, client):
    finish(job, _judged_shared_document())
    submission = job.candidate.submission
    submissions_services.submission_publish(submission, owner)
    score = submission.scores.get(problem_id=1)
    assert score.status == schema.CORRECT and score.correct and score.flagged
    assert not score.faster and not score.faster_1_5 and not score.faster_2_0 and score.speedup is None
    entry = LeaderboardEntry.objects.get(submission=submission)
    assert entry.correct == 1 and entry.faster == 0 and not entry.ranked and entry.fast_1_0 == 0
    result = Result.objects.get(job=job)
    assert result.document["environment"]["shared_device"] is True and "NVLink" in result.document["message"]
    assert result.gpu_seconds == pytest.approx(3.0)  # one GPU held, whatever W
    page = client.get(f"/leaderboard/{SLUG}/").content.decode()
    assert "Correct (of 87)" in page and "Faster (of 87)" not in page and "Geomean speedup" not in page
    assert "every rank of a W = 8 world shares one GPU" in page and "test-model" in page


def test_pkb_submit_prints_the_eval_line_that_reproduces_a_shared_profile(catalogue):
    from leaderboard.api.serializers import ProfileSerializer
    from pkb_client import submit

    listed = ProfileSerializer(HardwareProfile.objects.get(slug=SLUG)).data  # as GET /api/v1/profiles/ lists it
    assert listed["shared_device"] is True
    line = submit.trials_note(dict(listed))
    assert line.endswith("pkb eval PROBLEM FILE -W 8 --device cuda --trials 3 --shared-device"), line
    assert "--shared-device" not in submit.trials_note(dict(listed, shared_device=False))
