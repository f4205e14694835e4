"""``pkb eval --hidden-shape --hidden-world-size W2|auto``: the hidden checks from the command line, end to end through
the real judge (CPU gloo, problem 1, tiny shapes), the world size the judge draws for ``auto``
(evaluator/judge/hidden_world.py), and the refusal of a hidden world size the problem does not allow."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).parents[2]
HARDCODES_SHAPE = ROOT / "tests" / "redteam" / "candidates" / "hardcodes_shape.py"  # right at 64 x 32 only
TINY = ["--device", "cpu", "--reduced", "--M", "64", "--N", "32", "--trials", "1", "--no-timing", "--seed", "5"]


def pkb_eval(*argv, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "evaluator", "eval", *map(str, argv)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=ROOT,
    )


def test_hidden_checks_run_and_show_in_the_document(tmp_path):
    out = tmp_path / "out.json"
    run = pkb_eval(
        "1", "reference", "--world-size", "2", *TINY, "--hidden-shape", "--hidden-world-size", "1", "--json", out
    )
    assert run.returncode == 0, run.stderr
    document = json.loads(out.read_text())
    assert document["verdict"] == "correct", document["message"]
    hidden = [t for t in document["trials"] if "hidden_shape" in t]
    assert len(hidden) == 1 and hidden[0]["verdict"] == "correct"
    assert hidden[0]["hidden_shape"] != {"M": 64, "N": 32}  # a shape of the judge's drawing, not the run's
    assert document["hidden_world_size"]["world_size"] == 1
    assert document["hidden_world_size"]["verdict"] == "correct"
    assert "hidden shape" in run.stdout and "hidden world size W=1: correct" in run.stdout


def test_auto_has_the_judge_draw_another_world_size_the_problem_allows(tmp_path):
    out = tmp_path / "out.json"
    run = pkb_eval("1", "reference", "--world-size", "2", *TINY, "--hidden-world-size", "auto", "--json", out)
    assert run.returncode == 0, run.stderr
    document = json.loads(out.read_text())
    assert document["verdict"] == "correct", document["message"]
    assert document["hidden_world_size"]["world_size"] in (1, 3, 4)  # CPU: 1..4, never the run's own W
    assert document["hidden_world_size"]["verdict"] == "correct"


@pytest.mark.parametrize(
    "problem, world_size, device, shared, others",
    [
        (1, 2, "cpu", False, [1, 3, 4]),
        (49, 2, "cpu", False, [3, 4]),  # problem 49 needs W >= 2
        (11, 2, "cpu", False, [1, 4]),  # W divides 512
        (11, 4, "cuda", False, [1, 2]),  # up to the main run's GPUs
        (1, 1, "cuda", False, []),  # one GPU: no other world size
        (1, 8, "cuda", True, [2, 4]),  # a shared-device world
        (1, 4, "cuda", True, [2]),
    ],
)
def test_auto_draws_among_the_world_sizes_the_problem_and_the_host_allow(problem, world_size, device, shared, others):
    import problems
    from evaluator.judge import hidden_world

    prob = problems.get(problem)
    assert hidden_world.other_world_sizes(prob, world_size, device, shared) == others
    drawn = {hidden_world.draw(prob, world_size, device, shared) for _ in range(60)}
    assert drawn == (set(others) if others else {None})  # every one of them can come, and only they


def test_auto_draws_from_the_os_never_from_the_seed(monkeypatch):
    import random

    import problems
    from evaluator.judge import hidden_world

    calls = []

    class Recorded(random.SystemRandom):
        def choice(self, seq):
            calls.append(list(seq))
            return super().choice(seq)

    monkeypatch.setattr(hidden_world.random, "SystemRandom", Recorded)
    monkeypatch.setattr(hidden_world.random, "Random", lambda *a: pytest.fail("a seeded draw"))
    assert hidden_world.draw(problems.get(1), 2, "cpu") in (1, 3, 4) and calls == [[1, 3, 4]]


def test_auto_runs_no_hidden_world_where_there_is_no_other(monkeypatch):
    from evaluator import judge
    from evaluator.judge import hidden_world

    monkeypatch.setattr(hidden_world, "CPU_MAX_WORLD_SIZE", 1)  # a host of one rank: W = 1 is the run's own
    result = judge.evaluate(
        1, "reference", 1, "cpu", M=64, N=32, reduced=True, trials=1, timing=False, seed=5, hidden_world_size="auto"
    )
    assert result["verdict"] == "correct", result["message"]
    assert "hidden_world_size" not in result


def test_without_the_flags_no_hidden_check_runs(tmp_path):
    out = tmp_path / "out.json"
    run = pkb_eval("1", "reference", "--world-size", "2", *TINY, "--json", out)
    assert run.returncode == 0, run.stderr
    document = json.loads(out.read_text())
    assert "hidden_world_size" not in document and not any("hidden_shape" in t for t in document["trials"])


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["1", "reference", "-W", "2", "--hidden-world-size", "0"], "at least 1"),
        (["1", "reference", "-W", "2", "--hidden-world-size", "2"], "world size of the run itself"),
        # Problem 49 needs W >= 2 (E = W experts, top-2): W2 = 1 is refused before anything runs.
        (["49", "reference", "-W", "2", "--hidden-world-size", "1"], "hidden world size 1 is not allowed by 49_"),
        (["11", "reference", "-W", "2", "--hidden-world-size", "3"], "rule: W divides 512"),
        (["1", "reference", "-W", "2", "--hidden-world-size", "any"], "a world size or 'auto'"),
    ],
)
def test_a_bad_hidden_world_size_exits_2(argv, needle):
    run = pkb_eval(*argv, timeout=120)
    assert run.returncode == 2 and needle in run.stderr, run.stderr


def test_a_hard_coded_shape_is_caught_by_the_hidden_shape(tmp_path):
    out = tmp_path / "out.json"
    # At the run's own shape (64 x 32) it is right ...
    plain = pkb_eval("1", HARDCODES_SHAPE, "--world-size", "2", *TINY, "--json", out)
    assert plain.returncode == 0, plain.stderr
    assert json.loads(out.read_text())["verdict"] == "correct"
    # ... and the hidden trial at another shape catches it.
    caught = pkb_eval("1", HARDCODES_SHAPE, "--world-size", "2", *TINY, "--hidden-shape", "--json", out)
    assert caught.returncode == 0, caught.stderr
    document = json.loads(out.read_text())
    assert document["verdict"] == "incorrect" and "at the hidden shape" in document["message"], document["message"]
    assert document["trials"][-1]["hidden_shape"] != {"M": 64, "N": 32}
    assert "INCORRECT" in caught.stdout


def test_a_hidden_shape_that_cannot_be_drawn_is_recorded_as_skipped():
    from evaluator import judge

    # At M = N = 16 and W = 1 the only multiple of 16 in [M/2, M] is 16 itself: no other shape to draw.
    result = judge.evaluate(
        1, "reference", 1, "cpu", M=16, N=16, reduced=True, trials=1, timing=False, hidden_shape=True, seed=3
    )
    assert result["verdict"] == "correct", result["message"]
    assert result["hidden_shape"]["verdict"] == "skipped" and "too small" in result["hidden_shape"]["message"]
    assert not any("hidden_shape" in t for t in result["trials"])
