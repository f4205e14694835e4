"""Public seeds (feedback) and hidden seeds (ranking) never mix: public ones carry bit 62, the judge's own secret
draws never do, the judge refuses explicit seeds without it, feedback runs always pass public ones and leaderboard
jobs never pass any."""

import random
from pathlib import Path

import pytest

from evaluator.judge import evaluation as judge
from leaderboard.feedback import runner, seeds, services
from leaderboard.jobs import runner as site_runner
from tests.feedback.conftest import source


def test_public_seeds_are_fixed_published_and_marked():
    first = seeds.public_seeds(1)
    assert first == seeds.public_seeds(1) and len(set(first)) == seeds.COUNT
    assert set(first).isdisjoint(seeds.public_seeds(2))
    assert seeds.PUBLIC_SEED_BIT == judge.PUBLIC_SEED_BIT
    for pid in range(1, 88):
        assert all(seeds.is_public(s) and s < 2**63 for s in seeds.public_seeds(pid))
    assert seeds.for_run(1, 3) == first[:3] + first[-1:]


def test_the_judges_own_draws_are_never_public():
    for seed in (None, 0, 1, 12345):
        drawn = [s for _ in range(300) for s in judge._seeds(judge.Config(world_size=2, trials=5, seed=seed))]
        assert not any(seeds.is_public(s) for s in drawn)
    # what the ranking path uses (no --seed): the operating system's randomness, 62 bits
    assert all(s < judge.PUBLIC_SEED_BIT for s in judge._seeds(judge.Config(world_size=2, trials=50)))


def test_explicit_seeds_are_used_as_given_and_must_be_public(tmp_path):
    public = seeds.for_run(1, 2)
    assert judge._seeds(judge.Config(world_size=2, trials=2, seeds=public)) == public
    candidate = tmp_path / "c.py"
    candidate.write_text(source("good_1.py"))
    hidden_like = [random.getrandbits(62) for _ in range(3)]
    with pytest.raises(judge.BadRequest, match="public seeds"):
        judge.evaluate(1, str(candidate), 2, "cpu", trials=2, seeds=hidden_like)
    with pytest.raises(judge.BadRequest, match="public seeds"):
        judge.evaluate(1, str(candidate), 2, "cpu", trials=2, seeds=public[:2])  # one too few


def test_feedback_runs_pass_public_seeds_and_leaderboard_jobs_none(owner, session, submit):
    run = services.run_create(owner.submitter, session.pk, "1", source("good_1.py"), "good.py", 64, 64)
    command = runner.judge_command(run, Path("c.py"), Path("o.json"), Path("p"))
    passed = [int(s) for s in command[command.index("--seeds") + 1].split(",")]
    assert passed == run.seeds == seeds.for_run(1, run.trials)
    job = submit(owner).jobs.get()
    ranking = site_runner.judge_command(job, Path("c.py"), Path("o.json"))
    assert "--seeds" not in ranking and "--seed" not in ranking  # the judge draws secret seeds itself
    run.seeds = [123, 456, 789]  # a run can never be handed non-public seeds
    with pytest.raises(ValueError, match="non-public"):
        runner.judge_command(run, Path("c.py"), Path("o.json"), Path("p"))


def test_public_seeds_endpoint(client, catalogue):
    body = client.get("/api/v1/feedback/seeds/1_allreduce/").json()
    assert body["seeds"] == seeds.public_seeds(1) and body["problem_id"] == 1


def test_feedback_runs_ask_the_judge_through_a_request(owner, session, settings):
    from evaluator.contract.schema import JudgeRequest

    settings.PKB_SANDBOX_OFF = False
    run = services.run_create(owner.submitter, session.pk, "1", source("good_1.py"), "good.py", 64, 64)
    request = runner.judge_request(run, Path("c.py"), Path("o.json"), Path("p"))
    assert isinstance(request, JudgeRequest)
    assert request.seeds == tuple(run.seeds) and (request.M, request.N) == (64, 64) and request.sandbox_required
    assert request.timing and request.profile_dir is None  # a feedback run times; a profile run does not
    assert runner.judge_command(run, Path("c.py"), Path("o.json"), Path("p")) == request.command()
    assert JudgeRequest.from_argv(request.argv()) == request
