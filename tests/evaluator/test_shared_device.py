"""Shared-device worlds on CPU (pkb eval --shared-device; evaluator/judge/shared_device.py, evaluator/rank/
shared_device.py): the argument rules, the refusal of timing, the labels that keep a shared world's result from ever
ranking or reading as faster (each layer on its own), the rank's memory bound and out-of-memory message, and the host
gate. What needs a GPU (W ranks really sharing one) runs on the GPU host: benchmarks/shared_device_selfcheck.sh."""

from __future__ import annotations

import json
import os

import pytest
import torch

from evaluator import cli, judge
from evaluator.contract import requests as contract
from evaluator.contract import schema, verdict
from evaluator.judge import evaluation, hosts, shared_device
from evaluator.judge.config import Config
from evaluator.rank import shared_device as rank_shared
from evaluator.rank import worker

POLICY_VIOLATION = "import os\nos.environ['NCCL_NVLS_ENABLE'] = '1'\n\ndef solution(x):\n    return x\n"


# --- the argument rules -------------------------------------------------------------------------------------------


def test_shared_device_implies_no_timing_and_round_trips_through_the_command_line():
    request = contract.JudgeRequest.from_argv(
        ["eval", "1", "reference", "-W", "8", "--device", "cuda", "--shared-device"]
    )
    assert request.shared_device and request.timing is False
    assert "--shared-device" in request.argv() and "--no-timing" in request.argv()
    assert contract.JudgeRequest.from_argv(request.argv()) == request
    assert cli.evaluate_options(request)["shared_device"] is True
    assert "shared_device" not in cli.evaluate_options(contract.JudgeRequest("1", "reference", world_size=2))


@pytest.mark.parametrize(
    "extra, says",
    [(["--device", "cuda", "--pairs", "2"], "correctness only"), (["--device", "cpu"], "needs --device cuda")],
)
def test_a_shared_world_that_asks_for_timing_or_cpu_exits_2_saying_why(capsys, extra, says):
    status = cli.main(["eval", "1", "reference", "-W", "4", "--shared-device", *extra])
    err = capsys.readouterr().err
    assert status == 2 and says in err, err
    if "--pairs" in extra:
        assert "time-slic" in err or "take turns" in err  # why: the ranks share the GPU's time


def test_a_shared_world_needs_one_gpu_and_a_plain_one_a_gpu_per_rank(capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    assert cli.main(["eval", "1", "reference", "-W", "4", "--device", "cuda", "--shared-device"]) == 2
    assert "a shared-device world needs one GPU; this host has none" in capsys.readouterr().err
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert cli.main(["eval", "1", "reference", "-W", "4", "--device", "cuda"]) == 2
    assert "needs 4 GPUs; this host has 1 (--shared-device runs every rank on one)" in capsys.readouterr().err


def test_the_judge_refuses_a_timed_shared_world_whoever_asks():
    """The judge's own rule (Config), not only the command line's: a caller that builds the request in code."""
    with pytest.raises(judge.BadRequest, match="correctness only"):
        Config(world_size=8, device="cuda", shared_device=True)  # timing defaults to on
    with pytest.raises(judge.BadRequest, match="correctness only"):
        Config(world_size=8, device="cuda", shared_device=True, timing=False, pairs=3)
    assert Config(world_size=8, device="cuda", shared_device=True, timing=False).shared_device


def test_selfcheck_takes_the_flag_and_refuses_it_on_cpu(capsys):
    status = cli.main(["selfcheck", "--problems", "1", "-W", "2", "--device", "cpu", "--shared-device"])
    assert status == 2 and "needs --device cuda" in capsys.readouterr().err


def test_one_device_narrows_the_ranks_gpus_to_the_first_of_the_set_and_restores(monkeypatch):
    from evaluator.process import environment

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    with shared_device.one_device(True):
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "3"
        # what every rank the judge starts inherits
        assert environment.shared_environment(str(os.getcwd()))["CUDA_VISIBLE_DEVICES"] == "3"
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "3,5"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    with shared_device.one_device(True):
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "0"
    assert "CUDA_VISIBLE_DEVICES" not in os.environ
    with shared_device.one_device(False):
        assert "CUDA_VISIBLE_DEVICES" not in os.environ
    assert shared_device.first_device(" GPU-a1b2 , GPU-c3d4") == "GPU-a1b2"


# --- the labels: never ranked, never faster, each layer on its own ----------------------------------------------


def _timing_that_would_rank() -> dict:
    return {"speedup": 2.0, "speedup_ci": [1.8, 2.2], "reference_ms": 2.0, "candidate_ms": 1.0, "method": "cuda_events"}


def test_layer_the_flag_alone_withholds_faster_and_ranked():
    """Were a timing to reach the decision, the shared-device flag alone keeps it unranked and not faster."""
    ranked = verdict.conclude({"flags": [], "timing": _timing_that_would_rank()}, "cuda")["timing"]
    assert ranked["faster"] and ranked["ranked"]  # the same numbers without the flag would rank
    shared = verdict.conclude({"flags": [schema.FLAG_SHARED_DEVICE], "timing": _timing_that_would_rank()}, "cuda")
    assert not shared["timing"]["faster"] and not shared["timing"]["ranked"]


def test_layer_the_label_alone_drops_any_timing_and_says_what_the_run_proves():
    result = {
        "verdict": schema.CORRECT,
        "message": "",
        "flags": [],
        "timing": _timing_that_would_rank(),
        "environment": {"backend": "gloo"},
    }
    shared_device.label(result, True)
    assert result["timing"] is None and result["environment"] == {"backend": "gloo", "shared_device": True}
    assert result["flags"] == [schema.FLAG_SHARED_DEVICE]
    assert "correct on CUDA" in result["message"] and "NVLink" in result["message"] and "NCCL" in result["message"]
    assert "times nothing" in result["message"]
    untouched = {"verdict": schema.CORRECT, "flags": [], "timing": _timing_that_would_rank()}
    assert shared_device.label(dict(untouched), False) == untouched


def test_a_timeout_in_a_shared_world_names_it():
    result = shared_device.label({"verdict": schema.TIMEOUT, "message": "rank 3: no reply in 120 s", "flags": []}, True)
    assert result["message"].startswith("rank 3: no reply in 120 s (in a shared-device world")
    assert "spinning on a peer" in result["message"]


def test_the_flag_is_a_timing_flag_so_an_unranked_profile_keeps_correct():
    assert schema.FLAG_SHARED_DEVICE in schema.FLAGS and schema.FLAG_SHARED_DEVICE in schema.TIMING_FLAGS


@pytest.fixture
def one_gpu(monkeypatch):
    """The judge's process as on a one-GPU host (its ranks never start in these tests)."""
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)


def test_evaluate_labels_a_shared_world_even_when_no_rank_ran(one_gpu, tmp_path):
    path = tmp_path / "multicast.py"
    path.write_text(POLICY_VIOLATION)
    result = judge.evaluate(1, str(path), 8, "cuda", timing=False, shared_device=True)
    assert result["verdict"] == schema.POLICY_VIOLATION
    assert result["environment"]["shared_device"] is True and schema.FLAG_SHARED_DEVICE in result["flags"]


def test_evaluate_labels_and_never_ranks_what_its_ranks_returned(one_gpu, monkeypatch):
    """The judge's whole ending with a shared world's attempt that came back correct with a timing that would rank
    (the ranks are stood in for: the decision after them is what is tested)."""

    def attempt(prob, candidate, cfg, seeds, base, pool=None):
        assert cfg.shared_device and not cfg.timing and pool is None
        return dict(base, verdict=schema.CORRECT, message="", flags=[], timing=_timing_that_would_rank())

    monkeypatch.setattr(evaluation, "_run_once", attempt)
    result = judge.evaluate(1, "reference", 8, "cuda", timing=False, shared_device=True, hidden_world_size=None)
    assert result["verdict"] == schema.CORRECT and result["timing"] is None
    assert result["environment"]["shared_device"] is True and result["flags"] == [schema.FLAG_SHARED_DEVICE]


def test_the_hidden_world_size_of_a_shared_world_runs_shared(one_gpu, monkeypatch):
    seen = []

    def attempt(prob, candidate, cfg, seeds, base, pool=None):
        seen.append((cfg.world_size, cfg.shared_device))
        return dict(base, verdict=schema.CORRECT, message="", flags=[], timing=None)

    monkeypatch.setattr(evaluation, "_run_once", attempt)
    result = judge.evaluate(1, "reference", 8, "cuda", timing=False, shared_device=True, hidden_world_size=4)
    assert seen == [(8, True), (4, True)] and result["hidden_world_size"]["verdict"] == schema.CORRECT


# --- inside a rank ------------------------------------------------------------------------------------------------


def test_a_rank_shares_its_device_only_with_fewer_gpus_than_ranks():
    assert rank_shared.is_shared(1, 8) and rank_shared.is_shared(1, 2)
    assert not rank_shared.is_shared(8, 8) and not rank_shared.is_shared(1, 1) and not rank_shared.is_shared(0, 8)


def test_each_rank_is_bounded_to_its_share_of_the_device():
    gib = 2**30
    total = 141 * gib  # an H200
    fraction = rank_shared.memory_fraction(total, 8)
    assert fraction == pytest.approx((141 - 16) / 16 / 141)
    assert 16 * (fraction * total + rank_shared.CONTEXT_RESERVE_BYTES) <= total  # 2W processes fit beside each other
    assert rank_shared.memory_fraction(total, 2) > fraction
    assert rank_shared.memory_fraction(8 * gib, 8) == rank_shared.MIN_FRACTION


def test_running_out_in_a_shared_world_leaves_the_candidate_unverified_never_infra_error(monkeypatch):
    exc = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    plain = worker._failure(exc, None, "cand")
    assert plain["kind"] == schema.RUNTIME_ERROR  # one GPU per rank: the candidate's own allocation
    monkeypatch.setattr(
        worker, "SHARED_WORLD", {"world_size": 8, "memory_bound_bytes": 7 * 2**30, "total_bytes": 141 * 2**30}
    )
    shared = worker._failure(exc, None, "cand")
    assert shared["kind"] == rank_shared.LIMIT_KIND
    assert "shared-device world ran out of device memory" in shared["error"] and "16 rank processes" in shared["error"]
    assert "7.0 GiB of 141.0 GiB" in shared["error"]
    wrapped = RuntimeError("kernel failed")
    wrapped.__cause__ = RuntimeError("CUDA error: out of memory")
    assert worker._failure(wrapped, None, "cand")["kind"] == rank_shared.LIMIT_KIND
    assert worker._failure(ValueError("wrong shape"), None, "cand")["kind"] == schema.RUNTIME_ERROR


def test_the_judge_makes_a_shared_world_limit_unverified_and_believes_no_infra_claim_from_the_candidate():
    # The limit is the shared world's, so the candidate's logic is left unjudged (never correct, never retried);
    # an infra_error claim from a rank that ran candidate code is the candidate's runtime_error (protocol.py).
    from evaluator.judge import pair
    from evaluator.process import protocol

    assert pair._candidate_verdict(rank_shared.LIMIT_KIND) == schema.UNVERIFIED
    assert pair._candidate_verdict(rank_shared.LIMIT_KIND, loading=True) == schema.UNVERIFIED
    failures = []

    class Rank:
        rank, initialized = 0, True

    protocol._accept(
        Rank(), {"ok": False, "kind": schema.INFRA_ERROR, "error": "x"}, False, None, {}, failures.append, [Rank()]
    )
    assert failures[0].kind == schema.RUNTIME_ERROR


def test_a_kernel_written_for_a_gpu_per_rank_is_not_judged_wrong_in_a_shared_world(monkeypatch):
    exc = RuntimeError("CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported")
    assert worker._failure(exc, None, "cand")["kind"] == schema.RUNTIME_ERROR  # a GPU per rank: its own mistake
    monkeypatch.setattr(worker, "SHARED_WORLD", {"world_size": 4})
    failure = worker._failure(exc, None, "cand")
    assert failure["kind"] == rank_shared.LIMIT_KIND
    assert "all 4 ranks share one GPU, cuda:0" in failure["error"] and "current_device()" in failure["error"]


# --- the host gate ------------------------------------------------------------------------------------------------

ONE_H200 = {"gpus": [{"index": 0, "name": "NVIDIA H200"}], "missing": [], "links": {}}


def test_one_gpu_serves_a_shared_profile_of_eight_ranks_and_nothing_else_does():
    assert hosts.mismatch(ONE_H200, 8, "H200", shared_device=True) is None
    assert "one GPU each" in hosts.mismatch(ONE_H200, 8, "H200")
    assert "has none" in hosts.mismatch({"gpus": [], "missing": []}, 8, shared_device=True)
    assert "H100" in hosts.mismatch(ONE_H200, 8, "H100", shared_device=True)
    assert hosts.mismatch(ONE_H200, 8, nvlink=True, shared_device=True) is None  # no link between GPUs to need


def test_pkb_host_checks_a_shared_profile(tmp_path, monkeypatch, capsys):
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\n[ \"$1\" = topo ] && exit 0\necho '0, NVIDIA H200, GPU-1, 570.1, 143771 MiB'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PKB_NVIDIA_SMI", str(smi))
    assert cli.main(["host", "--ranks", "8", "--gpu-model", "H200", "--shared-device", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["refused"] is None
    assert cli.main(["host", "--ranks", "8", "--gpu-model", "H200"]) == 1
    assert "one GPU each" in capsys.readouterr().out


# --- on a GPU host (skipped here): W ranks really sharing one GPU --------------------------------------------------


@pytest.mark.timeout(600)
@pytest.mark.parametrize("world", [2, 4])
def test_a_reference_is_correct_against_itself_with_every_rank_on_one_gpu(world):
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    result = judge.evaluate(
        1, "reference", world, "cuda", timing=False, shared_device=True, trials=1, M=64, N=64, seed=7
    )
    assert result["verdict"] == schema.CORRECT, result["message"]
    env = result["environment"]
    assert env["shared_device"] is True and env["backend"] == "gloo" and env["ranks_per_device"] == 2 * world
    assert 0 < env["memory_fraction"] <= 1 / (2 * world) and result["timing"] is None
