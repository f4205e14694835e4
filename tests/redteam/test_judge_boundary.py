"""The judge's side of the trust boundary (docs/threat-model.md, attribution and bounded reading): what a candidate
writes to its reply pipe or its output files, or does only where a hidden check looks, is the candidate's verdict,
bounded in time and in the judge's memory, and never an infra_error, a skipped check or `correct`."""

import functools
import json
import os
import subprocess
import sys
import time

import pytest

from evaluator.contract import schema
from evaluator.judge import evaluation
from evaluator.process import processes
from evaluator.process.protocol import CandidateFault
from tests.redteam.harness import CANDIDATES, SMALL, notes, run

REPO = CANDIDATES.parents[2]
# The peak is the process's own (VmHWM of its address space): getrusage's ru_maxrss survives execve on Linux, so a
# child of a large pytest process would report its parent's size at fork.
_PEAK_MIB = "int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) / 1024"
# What a judge may hold beyond a process that only imports torch and the judge: judging a tiny problem adds a few tens
# of MiB. The bound is relative because that import alone differs by host (about 200 MiB with the CPU build of torch,
# about 480 MiB with a CUDA build); the 256 MiB reply flood took the old reader 524 MiB above it, and inflating the
# zip bomb's record 1 GiB.
JUDGE_HEADROOM_MIB = 180


@functools.cache
def judge_rss_bound_mib() -> float:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import torch\nfrom evaluator import judge\nfrom evaluator.rank import outputs\nprint(PEAK)".replace(
                "PEAK", _PEAK_MIB
            ),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return float(done.stdout.split()[-1]) + JUDGE_HEADROOM_MIB


_JUDGE = """
import json, sys
from evaluator import judge
result = judge.evaluate(1, sys.argv[1], 2, "cpu", **json.loads(sys.argv[2]))
box = (result.get("environment") or {}).get("sandbox", {}).get("box") or {}
print(json.dumps({"verdict": result["verdict"], "message": result["message"], "box": box,
                  "maxrss_mib": PEAK}))
""".replace("PEAK", _PEAK_MIB)


def _nothing_left(box: dict) -> None:
    """No process of the candidate's box uid alive, and its box directory gone."""
    if box.get("uid"):
        assert processes.processes_of(box["uid"]) == [], box
    if box.get("dir"):
        assert not os.path.exists(box["dir"]), box


def _timed_run(candidate: str, **options):
    began = time.monotonic()
    result = run(candidate, **options)
    return result, time.monotonic() - began


def test_a_reply_line_nested_100000_deep_is_the_candidates_runtime_error():
    result, wall = _timed_run("reply_deep_json")
    assert result["verdict"] == schema.RUNTIME_ERROR, result["message"]
    assert "nested deeper than" in result["message"]
    assert result["attempts"] == 1 and wall < SMALL["timeout_s"] + 30, wall
    _nothing_left(notes(result).get("box") or {})


def test_a_256_mib_reply_flood_is_stopped_within_the_timeout_with_the_judges_memory_bounded():
    began = time.monotonic()
    run_ = subprocess.run(
        [sys.executable, "-c", _JUDGE, str(CANDIDATES / "reply_flood.py"), json.dumps(SMALL)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    wall = time.monotonic() - began
    assert run_.returncode == 0, run_.stderr[-3000:]
    report = json.loads(run_.stdout.strip().splitlines()[-1])
    assert report["verdict"] == schema.RUNTIME_ERROR, report["message"]
    assert "reply line longer than" in report["message"]
    assert wall < SMALL["timeout_s"] + 30, wall  # the old reader held the judge 463 s against a 120 s timeout
    assert report["maxrss_mib"] < judge_rss_bound_mib(), (report, judge_rss_bound_mib())
    _nothing_left(report["box"])


def test_a_zip_bomb_output_is_refused_before_any_reference_rank_inflates_it():
    result, wall = _timed_run("zip_bomb_output")
    assert result["verdict"] == schema.INCORRECT, result["message"]
    assert "is compressed" in result["message"]
    assert wall < SMALL["timeout_s"] + 30, wall
    _nothing_left(notes(result).get("box") or {})


# The candidate's own file writer (it replaces torch.save in its process), then the reference rank's loader.
_LOAD_BOMB = """
import os, runpy, sys, torch
runpy.run_path(sys.argv[1])
torch.save(None, sys.argv[2])
print(os.path.getsize(sys.argv[2]))
from evaluator.rank import outputs
try:
    outputs.load(sys.argv[2], max_bytes=outputs.size_limit(8 * 8))
    print("loaded")
except ValueError as exc:
    print("refused:", exc)
print(PEAK)
""".replace("PEAK", _PEAK_MIB)


def test_a_trusted_loader_never_allocates_what_a_bombs_record_declares(tmp_path):
    """The reference rank's loader, alone in a process: the candidate's ~1 MiB file declaring 1 GiB is refused
    unread, and the process's peak memory stays near that of importing torch (loading it took 1.2 GiB)."""
    done = subprocess.run(
        [sys.executable, "-c", _LOAD_BOMB, str(CANDIDATES / "zip_bomb_output.py"), str(tmp_path / "bomb.pt")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    size, verdict, peak = done.stdout.strip().splitlines()[-3:]
    assert int(size) < 4 << 20  # within the byte limit of a tiny output's file: only its records tell
    assert verdict.startswith("refused:") and "compressed" in verdict, verdict
    assert float(peak) < judge_rss_bound_mib(), (peak, judge_rss_bound_mib())


def test_a_w2_kernel_garbling_replies_elsewhere_is_never_correct():
    """Hard-coded for W = 2; at the hidden W = 1 it garbles its reply. Judged correct before (the check's
    infra_error was ignored); now the hidden run's failure is the candidate's and the verdict."""
    result, wall = _timed_run("hardcodes_w2_garbles_reply", hidden_world_size=1)
    assert result["verdict"] == schema.RUNTIME_ERROR, result["message"]
    assert "at the hidden world size W=1" in result["message"] and "nested deeper" in result["message"]
    assert result["hidden_world_size"]["verdict"] == schema.RUNTIME_ERROR
    assert wall < 2 * SMALL["timeout_s"] + 30, wall
    _nothing_left(notes(result).get("box") or {})


# --- the fail-closed and attribution rules alone (no processes: each pins one layer) --------------------------------


def _fake_runs(monkeypatch, outcomes: dict):
    """evaluation._run_once replaced: the document for each world size (a list: one per call, the last repeated)."""
    calls = []

    def fake(prob, candidate, cfg, seeds, base, pool=None):
        calls.append(cfg.world_size)
        docs = outcomes[cfg.world_size]
        return dict(
            base, **docs[min(len(calls) - 1 - sum(1 for c in calls[:-1] if c != cfg.world_size), len(docs) - 1)]
        )

    monkeypatch.setattr(evaluation, "_run_once", fake)
    return calls


CORRECT_DOC = {"verdict": schema.CORRECT, "message": "all trials correct", "trials": [], "timing": None, "flags": []}
INFRA_DOC = {"verdict": schema.INFRA_ERROR, "message": "judge failure: lost", "trials": [], "timing": None, "flags": []}


def test_a_hidden_world_size_check_that_cannot_be_judged_twice_is_unverified(monkeypatch):
    calls = _fake_runs(monkeypatch, {2: [CORRECT_DOC], 1: [INFRA_DOC]})
    result = evaluation.evaluate(1, "reference", 2, "cpu", **dict(SMALL, hidden_world_size=1))
    assert result["verdict"] == schema.UNVERIFIED, result["message"]
    assert "hidden world-size check at W=1" in result["message"] and calls == [2, 1, 1]
    assert result["hidden_world_size"]["attempts"] == 2


def test_a_hidden_world_size_check_judged_on_its_second_run_decides(monkeypatch):
    calls = _fake_runs(monkeypatch, {2: [CORRECT_DOC], 1: [INFRA_DOC, CORRECT_DOC]})
    result = evaluation.evaluate(1, "reference", 2, "cpu", **dict(SMALL, hidden_world_size=1))
    assert result["verdict"] == schema.CORRECT and calls == [2, 1, 1], result["message"]


def test_a_hidden_shape_check_that_cannot_be_judged_is_unverified_after_a_second_run(monkeypatch):
    unjudged = dict(INFRA_DOC, _unjudged="the hidden-shape check")
    calls = _fake_runs(monkeypatch, {2: [unjudged]})
    result = evaluation.evaluate(1, "reference", 2, "cpu", **dict(SMALL, hidden_shape=True, max_attempts=1))
    assert result["verdict"] == schema.UNVERIFIED and calls == [2, 2], result["message"]
    assert result["message"].startswith("the hidden-shape check could not be judged in 2 attempts")


class _Group:
    def __init__(self, ran: bool):
        self.ran = ran

    def candidate_ran(self) -> bool:
        return self.ran


def test_a_fault_on_the_candidates_group_is_its_verdict_once_its_code_ran():
    fault = CandidateFault("the judge could not freeze the candidate's processes: OSError: busy", "policy_violation")
    assert evaluation.attribute(fault, _Group(True))["verdict"] == schema.POLICY_VIOLATION
    assert evaluation.attribute(fault, _Group(False))["verdict"] == schema.INFRA_ERROR  # no candidate code yet
    assert evaluation.attribute(OSError("disk"), _Group(True))["verdict"] == schema.INFRA_ERROR  # the platform's


def test_a_clean_up_that_fails_on_the_candidates_box_is_the_candidates(monkeypatch):
    """The box's clean-up raising after the candidate ran (a tree it cannot remove, a kill that never completes):
    the candidate's runtime_error, said so, never infra_error; and the box is still closed."""
    from evaluator.process import sandbox

    closed = []
    real_close = sandbox.Sandbox.close

    def failing_cleanup(self):
        raise OSError("scratch could not be removed")

    def close(self):
        closed.append(True)
        return real_close(self)

    monkeypatch.setattr(sandbox.Sandbox, "cleanup", failing_cleanup)
    monkeypatch.setattr(sandbox.Sandbox, "close", close)
    result = run("honest_allreduce")
    assert result["verdict"] == schema.RUNTIME_ERROR, result["message"]
    assert "while closing" in result["message"] and "scratch could not be removed" in result["message"]
    assert closed and result["attempts"] == 1


class _Paused:
    """A group stand-in for Pair's pause/resume around the reference's probe (no processes)."""

    def __init__(self, fails_with=None):
        self.fails_with = fails_with

    def pause(self):
        pass

    def resume(self):
        pass

    def command(self, cmd, timeout):
        raise self.fails_with


def _pair_with_hidden_shape(monkeypatch, reference_failure):
    import problems
    from evaluator.judge.config import Config
    from evaluator.judge.pair import Pair
    from evaluator.process.protocol import GroupFailure

    cfg = Config(world_size=2, device="cpu", M=64, N=32, trials=1, timing=False, hidden_shape=True)
    pair = Pair(problems.get(1), _Paused(GroupFailure(*reference_failure)), _Paused(), cfg)
    correct = {"trial": 0, "seed": 1, "verdict": schema.CORRECT, "ranks": [], "reference_call_ms": 1.0}
    monkeypatch.setattr(Pair, "_trial", lambda self, index, seed, tag, shape=None: (dict(correct), 1.0))
    return pair.judge([1, 2])


def test_a_reference_that_dies_at_the_hidden_shape_leaves_the_check_unjudged_never_skipped(monkeypatch):
    """Died (or hung, or garbled) at the drawn shape: not a property of the shape, so the check was not judged;
    the pair says so (re-run, then unverified: evaluate) and names the command a fresh reference re-runs alone."""
    out = _pair_with_hidden_shape(monkeypatch, ("exited", "rank 0 was killed by SIGKILL", 0))
    assert out["verdict"] == schema.INFRA_ERROR and out["_unjudged"] == "the hidden-shape check", out
    assert out["_reference_failed"]["tag"] == "probe" and "hidden shape" in out["message"]


def test_a_reference_that_refuses_the_hidden_shape_is_a_recorded_skip(monkeypatch):
    out = _pair_with_hidden_shape(monkeypatch, ("runtime_error", "ValueError: M must be 64", 0))
    assert out["verdict"] == schema.CORRECT and out["hidden_shape"]["verdict"] == "skipped", out
    assert "does not run at the drawn shape" in out["hidden_shape"]["message"]


def test_a_replys_error_of_any_type_and_size_becomes_a_bounded_message():
    from evaluator.process import protocol

    failures = []
    rank = protocol.Rank(0, None, -1, initialized=True)
    protocol._accept(
        rank, {"ok": False, "kind": {"k": 1}, "error": {"a": "b" * 100_000}}, False, None, {}, failures.append
    )
    (failure,) = failures
    assert failure.kind == "protocol" and isinstance(failure.message, str)
    assert len(failure.message) < protocol.MESSAGE_CHARS + 100


def test_an_endless_reply_line_is_reported_once_and_never_kept():
    """A writer that sends one endless line: it is reported once as the rank's protocol failure, and nothing of it is
    kept (the judge's buffer stays empty however much more comes)."""
    from evaluator.process import protocol

    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    rank = protocol.Rank(0, None, read_fd)
    pipe_bytes = 1 << 20
    try:
        import fcntl

        fcntl.fcntl(write_fd, 1031, pipe_bytes)  # F_SETPIPE_SZ: 1 MiB a write
        pipe_bytes = fcntl.fcntl(write_fd, 1032)  # F_GETPIPE_SZ
        replies = []
        for _ in range(2 * protocol.MAX_LINE_BYTES // pipe_bytes + 2):
            os.write(write_fd, b"x" * pipe_bytes)
            replies += protocol.read(rank)
        assert [r["kind"] for r in replies] == ["protocol"] and "longer than" in replies[0]["error"]
        assert rank.overflowed and len(rank.buffer) == 0
    finally:
        os.close(read_fd)
        os.close(write_fd)


@pytest.mark.parametrize("mode", ["deep", "fifo"])
def test_a_garbled_build_log_never_crashes_or_blocks_the_judges_clean_up(tmp_path, mode):
    from tests.redteam.harness import from_template

    result, wall = _timed_run(from_template(tmp_path, "build_log_garbage", MODE=mode))
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert "unreadable" in result["build"], result["build"]
    assert wall < SMALL["timeout_s"] + 30, wall
    _nothing_left(notes(result).get("box") or {})


def test_a_rank_log_is_read_bounded_and_only_from_a_plain_file(tmp_path):
    from evaluator.process import group

    log = tmp_path / "rank0.stdout.log"
    log.write_bytes(b"x" * (1 << 20) + b"END")
    tail = group._tail(str(log))
    assert tail.endswith("END") and len(tail.encode()) <= group.LOG_TAIL_BYTES + 100
    os.mkfifo(tmp_path / "fifo.log")  # would block an open() for reading for good
    os.symlink(log, tmp_path / "link.log")
    assert group._tail(str(tmp_path / "fifo.log")) == "" and group._tail(str(tmp_path / "link.log")) == ""


class _Proc:
    """A rank process for protocol.collect: alive (``returncode`` None) or killed."""

    pid = 0

    def __init__(self, returncode=None):
        self.returncode = returncode

    def poll(self):
        return self.returncode


def _collect_with_one_rank_up(messages: dict):
    """Two candidate ranks: rank 0 past process-group start-up, rank 1 not; rank 1's pipe holds ``messages[1]`` and
    its process is dead. The GroupFailure collect raises."""
    from evaluator.process import protocol

    ranks, ends = [], []
    for rank in (0, 1):
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        os.write(write_fd, messages.get(rank, b""))
        ends.append(write_fd)
        ranks.append(protocol.Rank(rank, _Proc(-9 if rank == 1 else None), read_fd, initialized=rank == 0))
    try:
        with pytest.raises(protocol.GroupFailure) as caught:
            protocol.collect(ranks, trusted=False, timeout=2.0, grace=0.1)
        return caught.value
    finally:
        for fd in ends + [r.reply_fd for r in ranks]:
            os.close(fd)


def test_a_sibling_rank_killed_before_its_start_up_ended_is_the_candidates():
    """The candidate's code in rank 0 can kill (or stop, or write into the pipe of) rank 1 of its own box before
    rank 1 reported its start-up: once any rank of the group is past start-up, that is the candidate's doing."""
    failure = _collect_with_one_rank_up({})
    assert failure.kind == "exited" and failure.rank == 1, (failure.kind, failure.message)


def test_a_platform_failure_claimed_for_a_sibling_rank_is_not_believed():
    forged = json.dumps({"ok": False, "kind": "infra_error", "error": "the platform failed"}).encode() + b"\n"
    failure = _collect_with_one_rank_up({1: forged})
    assert failure.kind == "runtime_error", (failure.kind, failure.message)


# --- layers the mutation pass found unpinned (benchmarks/mutation_pass.py) -----------------------------------------


def test_a_reply_too_deep_for_the_parser_is_a_protocol_failure_even_past_the_depth_scan(monkeypatch):
    """The decoder's own errors are caught whatever the depth scan lets through (its bound lifted here): json.loads
    raises RecursionError on a line nested 100,000 deep, and that is the rank's protocol failure, never a crash."""
    from evaluator.process import protocol

    monkeypatch.setattr(protocol, "MAX_JSON_DEPTH", 10**9)
    reply = protocol.parse(b"[" * 100_000 + b"]" * 100_000)
    assert reply["kind"] == "protocol" and "RecursionError" in reply["error"], reply


def test_one_read_takes_a_bounded_slice_of_an_endless_writer(monkeypatch):
    """A writer that never pauses: one read() takes at most READ_SLICE_BYTES and returns, so the caller checks its
    deadline while data flows (a pipe whose writer outpaces the judge would otherwise hold it in one call)."""
    from evaluator.process import protocol

    taken = []

    def endless(fd, n):
        taken.append(n)
        if sum(taken) > 4 * protocol.READ_SLICE_BYTES:
            raise AssertionError("read() never came back to look at its deadline")
        return b"x" * n

    rank = protocol.Rank(0, None, -1)
    monkeypatch.setattr(protocol.os, "read", endless)
    replies = protocol.read(rank)
    monkeypatch.undo()
    assert sum(taken) <= protocol.READ_SLICE_BYTES + 65536
    assert [r["kind"] for r in replies] == ["protocol"] and rank.overflowed


def test_stored_records_declaring_more_than_the_output_allows_are_refused(tmp_path):
    """check_records alone (the file-size check before it set aside): uncompressed records whose declared sizes add up
    past the bound are refused from the zip's directory, unread (a directory may list the same bytes many times)."""
    import zipfile

    from evaluator.rank import outputs

    path = tmp_path / "records.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for i in range(4):
            archive.writestr(f"archive/data/{i}", b"\0" * 4096)
    with open(path, "rb") as f:
        with pytest.raises(ValueError, match="declare"):
            outputs.check_records(f, 3 * 4096)
        outputs.check_records(f, 4 * 4096)  # within the bound: accepted, the file left at its start
        assert f.tell() == 0


def test_a_timing_pair_the_platform_failed_is_run_once_more_before_it_is_dropped(monkeypatch):
    """Pair 2's first run is the platform's failure; its second run, the candidate wrong: the verdict (a pair is
    dropped only when it cannot be judged twice, so a candidate cannot shed a pair it loses by failing its first
    run)."""
    import problems
    from evaluator.judge.config import Config

    runs = []

    def fake(prob, candidate, cfg, seeds, base, pool=None):
        runs.append(cfg.world_size)
        wrong = dict(CORRECT_DOC, verdict=schema.INCORRECT, message="trial 0: output differs")
        return dict(base, **(INFRA_DOC if len(runs) == 1 else wrong))

    monkeypatch.setattr(evaluation, "_run_once", fake)
    cfg = Config(world_size=2, device="cpu", M=64, N=32, trials=1, timing=True, pairs=2, seed=5)
    result = {
        "verdict": schema.CORRECT,
        "message": "",
        "trials": [],
        "flags": [],
        "timing": {"estimate_ms": 1.0, "reference_estimate_ms": 1.0},
    }
    evaluation._more_pairs(problems.get(1), "reference", cfg, {}, result, None, 2)
    assert runs == [2, 2] and result["verdict"] == schema.INCORRECT, result
    assert result["message"].startswith("in timing pair 2 of 2")
