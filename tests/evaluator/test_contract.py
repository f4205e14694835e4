"""The judge request (evaluator/contract/requests.py): one writer of ``pkb eval``'s command line (JudgeRequest.argv),
one reader (JudgeRequest.from_argv, and the command line's own ``eval`` parser, built from the contract). Round trips
for every field, hand-picked and Hypothesis-drawn; the command line parses exactly what a request writes."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator import cli
from evaluator.contract import requests as contract
from evaluator.contract import schema
from evaluator.contract.requests import JUDGE, JudgeRequest

ROOT = Path(__file__).resolve().parents[2]
FIELDS = [f.name for f in dataclasses.fields(JudgeRequest)]

# A value unlike the default for every field: each one must survive the round trip on its own.
NON_DEFAULT = {
    "problem": "13_gemm_allreduce",
    "candidate": "/tmp/job 7/c.py",
    "world_size": 8,
    "device": "cuda",
    "trials": 3,
    "seed": -4,
    "M": 64,
    "N": 32,
    "reduced": True,
    "json_out": "/tmp/out.json",
    "dtype": "float32",
    "timing": False,
    "multicast_allowed": True,
    "sandbox_required": True,
    "timeout_s": 2.5,
    "seeds": (1 << 62 | 5, 1 << 62 | 6),
    "hidden_shape": True,
    "hidden_world_size": 4,
    "pairs": 8,
    "profile_dir": "-odd/dir",
    "shared_device": True,
}


def test_every_field_has_a_non_default_case():
    assert sorted(NON_DEFAULT) == sorted(FIELDS)


@pytest.mark.parametrize("name", FIELDS)
def test_each_field_round_trips(name):
    base = {"problem": "1", "candidate": "reference", "world_size": 2}
    request = JudgeRequest(**{**base, name: NON_DEFAULT[name]})
    assert getattr(request, name) == NON_DEFAULT[name]
    assert JudgeRequest.from_argv(request.argv()) == request


def test_the_command_is_the_judge_then_the_argv():
    request = JudgeRequest(**NON_DEFAULT)
    assert request.command() == [*JUDGE, *request.argv()]
    assert list(JUDGE) == [sys.executable, "-m", "evaluator.cli"] and schema.JUDGE is JUDGE
    argv = request.argv()
    assert argv[:3] == ["eval", "13_gemm_allreduce", "/tmp/job 7/c.py"]
    assert argv[argv.index("--world-size") + 1] == "8" and "--profile=-odd/dir" in argv


def test_defaults_are_left_out_but_the_world_trials_and_output_are_always_written():
    argv = JudgeRequest("1", "reference", world_size=2, json_out="o.json").argv()
    assert argv == [
        "eval",
        "1",
        "reference",
        "--world-size",
        "2",
        "--device",
        "cpu",
        "--trials",
        "5",
        "--json",
        "o.json",
    ]


def test_not_an_eval_or_bad_arguments_are_refused():
    with pytest.raises(SystemExit, match="only eval commands"):
        JudgeRequest.from_argv(["problems", "list"])
    with pytest.raises(SystemExit) as refused:
        JudgeRequest.from_argv(["eval", "1", "reference"])  # no --world-size
    assert refused.value.code == 2
    with pytest.raises(SystemExit, match="bad --seeds"):
        JudgeRequest.from_argv(["eval", "1", "reference", "-W", "2", "--seeds", "1,x"])
    with pytest.raises(ValueError):
        JudgeRequest("-1", "reference", world_size=2)


names = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=20).filter(
    lambda s: not s.startswith("-")
)
paths = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30)
ints = st.integers(min_value=-(1 << 63), max_value=1 << 63)
requests = st.builds(
    JudgeRequest,
    problem=names,
    candidate=names,
    world_size=ints,
    device=st.sampled_from(contract.DEVICES),
    trials=ints,
    seed=st.none() | ints,
    M=ints,
    N=ints,
    reduced=st.booleans(),
    json_out=st.none() | paths,
    dtype=st.sampled_from(contract.DTYPES),
    timing=st.booleans(),
    multicast_allowed=st.booleans(),
    sandbox_required=st.booleans(),
    timeout_s=st.none() | st.floats(allow_nan=False, allow_infinity=False),
    seeds=st.none() | st.lists(ints, min_size=1, max_size=6).map(tuple),
    hidden_shape=st.booleans(),
    hidden_world_size=st.none() | ints | st.just(contract.HIDDEN_WORLD_AUTO),
    pairs=ints,
    profile_dir=st.none() | paths,
    shared_device=st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(requests)
def test_any_request_round_trips(request):
    assert JudgeRequest.from_argv(request.argv()) == request


@settings(max_examples=150, deadline=None)
@given(requests)
def test_the_command_line_parses_exactly_the_contracts_argv(request):
    args = cli.build_parser().parse_args(request.argv())
    assert args.func is cli._eval
    assert JudgeRequest.from_namespace(args) == request


def test_the_eval_parser_has_the_contracts_options_and_no_other():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["eval"]
    dests = {a.dest for a in sub._actions if a.dest != "help"}
    assert dests == set(FIELDS)


def test_the_cli_hands_every_request_field_to_the_judge():
    """evaluator/cli.py's Config mapping: judge.evaluate gets every option of the request."""
    request = JudgeRequest(**NON_DEFAULT)
    options = cli.evaluate_options(request)
    assert options["seeds"] == list(request.seeds) and options["timing"] is False and options["sandbox_required"]
    given_apart = {"problem", "candidate", "world_size", "device", "json_out"}
    assert set(options) == set(FIELDS) - given_apart


def test_the_world_size_is_read_in_one_place():
    """``--world-size`` is spelled once in the judge's command lines (eval, selfcheck, serve): the contract. (The rank
    processes' own command line, evaluator/process and evaluator/rank, is the judge's inside.)"""
    hits = [
        p.relative_to(ROOT).as_posix()
        for p in [*(ROOT / "evaluator").glob("*.py"), *(ROOT / "evaluator" / "contract").glob("*.py")]
        if '"--world-size"' in p.read_text()
    ]
    assert hits == ["evaluator/contract/requests.py"], hits
    site = [
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "leaderboard").rglob("*.py")
        if any(word in p.read_text() for word in ('"--world-size"', '"evaluator.cli"', '"evaluator.serve"'))
    ]
    assert site == [], site


def test_the_eval_command_line_runs_a_request(tmp_path):
    out = tmp_path / "r.json"
    request = JudgeRequest(
        "1", "reference", world_size=1, trials=1, M=64, N=32, reduced=True, timing=False, json_out=str(out)
    )
    done = subprocess.run(request.command(), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"verdict": "correct"' in out.read_text()


def test_the_warm_judge_reads_what_the_site_writes():
    args = contract.serve_parser().parse_args(contract.serve_command(4, "cuda", 2, 9)[len(contract.SERVE) :])
    assert (args.world_size, args.device, args.warm, args.reply_fd) == (4, "cuda", 2, 9)


# --- the build stage's request (PrebuildRequest: ``pkb prebuild``) ---------------------------------------------------

PREBUILD_FIELDS = [f.name for f in dataclasses.fields(contract.PrebuildRequest)]
PREBUILD_NON_DEFAULT = {
    "problem": "1_allreduce",
    "candidate": "/tmp/build 3/c.py",
    "target_device": "cpu",
    "json_out": "/tmp/report.json",
    "sandbox_required": True,
    "timeout_s": 450.0,
    "arch": "8.0;9.0a",
    "max_jobs": 2,
    "nice": 10,
}


def test_every_prebuild_field_has_a_non_default_case():
    assert sorted(PREBUILD_NON_DEFAULT) == sorted(PREBUILD_FIELDS)


@pytest.mark.parametrize("name", PREBUILD_FIELDS)
def test_each_prebuild_field_round_trips(name):
    base = {"problem": "1", "candidate": "c.py"}
    request = contract.PrebuildRequest(**{**base, name: PREBUILD_NON_DEFAULT[name]})
    assert getattr(request, name) == PREBUILD_NON_DEFAULT[name]
    assert contract.PrebuildRequest.from_argv(request.argv()) == request


def test_the_prebuild_command_line_parses_exactly_the_contracts_argv():
    request = contract.PrebuildRequest(**PREBUILD_NON_DEFAULT)
    assert request.command() == [*JUDGE, *request.argv()] and request.argv()[:3] == [
        "prebuild",
        "1_allreduce",
        "/tmp/build 3/c.py",
    ]
    args = cli.build_parser().parse_args(request.argv())
    assert args.func is cli._prebuild
    assert contract.PrebuildRequest.from_namespace(args) == request
    sub = next(a for a in cli.build_parser()._actions if a.dest == "command").choices["prebuild"]
    assert {a.dest for a in sub._actions if a.dest != "help"} == set(PREBUILD_FIELDS)


def test_the_target_device_and_output_are_always_written_and_each_request_reads_only_its_own():
    argv = contract.PrebuildRequest("1", "c.py").argv()
    assert argv == ["prebuild", "1", "c.py", "--target-device", "cuda"]
    with pytest.raises(SystemExit, match="only prebuild commands"):
        contract.PrebuildRequest.from_argv(JudgeRequest("1", "c.py", world_size=2).argv())
    with pytest.raises(SystemExit, match="only eval commands"):
        JudgeRequest.from_argv(argv)
    assert schema.PrebuildRequest is contract.PrebuildRequest  # what the site's build worker imports


prebuilds = st.builds(
    contract.PrebuildRequest,
    problem=names,
    candidate=names,
    target_device=st.sampled_from(contract.DEVICES),
    json_out=st.none() | paths,
    sandbox_required=st.booleans(),
    timeout_s=st.none() | st.floats(allow_nan=False, allow_infinity=False),
    arch=st.none() | names,
    max_jobs=st.none() | ints,
    nice=ints,
)


@settings(max_examples=200, deadline=None)
@given(prebuilds)
def test_any_prebuild_request_round_trips(request):
    assert contract.PrebuildRequest.from_argv(request.argv()) == request


def test_the_hidden_world_size_is_a_number_or_auto():
    """``auto``: the judge draws the hidden world size (evaluator/judge/hidden_world.py); a number still works."""
    base = {"problem": "1", "candidate": "reference", "world_size": 2}
    auto = JudgeRequest(**base, hidden_world_size="auto")
    assert auto.argv()[-2:] == ["--hidden-world-size", "auto"] and JudgeRequest.HIDDEN_WORLD_AUTO == "auto"
    assert JudgeRequest.from_argv(auto.argv()) == auto
    assert (
        JudgeRequest.from_argv(["eval", "1", "reference", "-W", "2", "--hidden-world-size", "3"]).hidden_world_size == 3
    )
    with pytest.raises(ValueError, match="a number or 'auto'"):
        JudgeRequest(**base, hidden_world_size="any")
    with pytest.raises(SystemExit):
        JudgeRequest.from_argv(["eval", "1", "reference", "-W", "2", "--hidden-world-size", "any"])


@pytest.mark.parametrize(
    "value, judge, site",
    [
        (None, "auto", "required"),
        ("", "auto", "required"),
        ("required", "required", "required"),
        (" Strict ", "required", "required"),
        ("0", "off", "off"),
        ("OFF", "off", "off"),
        ("no", "off", "off"),
        ("auto", "auto", "auto"),
        ("yes please", "auto", "auto"),
    ],
)
def test_pkb_sandbox_is_read_one_way_by_the_judge_and_the_site(monkeypatch, value, judge, site):
    """One reader of PKB_SANDBOX (schema.sandbox_mode): the judge's mode (evaluator/process/sandbox.py) and the site's
    setting (leaderboard/settings.py) differ only in the default when it is unset; "off" means off on both sides."""
    from evaluator.process import sandbox

    if value is None:
        monkeypatch.delenv("PKB_SANDBOX", raising=False)
    else:
        monkeypatch.setenv("PKB_SANDBOX", value)
    assert sandbox.mode() == judge
    assert schema.sandbox_mode(value, default="required") == site


def test_the_sites_setting_is_that_reading():
    """leaderboard/settings.py itself, loaded fresh under three values of PKB_SANDBOX."""
    code = (
        "import importlib, os, sys\n"
        "for value in ('', '0', ' Strict ', 'auto'):\n"
        "    os.environ['PKB_SANDBOX'] = value\n"
        "    sys.modules.pop('leaderboard.settings', None)\n"
        "    settings = importlib.import_module('leaderboard.settings')\n"
        "    print(settings.PKB_SANDBOX, settings.PKB_SANDBOX_OFF)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:4] == ["required False", "off True", "required False", "auto False"]
