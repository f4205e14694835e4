"""Trusted ranks forked from the judge's fork server (evaluator/process/forkserver.py): held like fresh processes, with
the rank's own session and environment, gone with the judge, and replaced by fresh processes when it is off or
fails."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from evaluator.process import forkserver, protocol
from evaluator.process.environment import REPO_ROOT
from evaluator.process.group import RankGroup

SHAPE = dict(problem="1", candidate="reference", M=64, N=32, dtype="float32", reduced=True)


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("PPid:")).split()[1])


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def forks_on(monkeypatch):
    monkeypatch.setenv(forkserver.SWITCH, "1")


def test_trusted_ranks_are_forked_children_of_the_server_in_sessions_of_their_own(forks_on, tmp_path):
    group = RankGroup("ref", world_size=2, device="cpu", workdir=str(tmp_path / "ref"), trusted=True, **SHAPE)
    try:
        server = forkserver.server()
        assert server is not None and server.alive()
        for r in group.ranks:
            assert isinstance(r.proc, forkserver.ForkedProcess)
            assert _parent(r.proc.pid) == server.proc.pid
            assert os.getpgid(r.proc.pid) == r.proc.pid  # killpg, SIGSTOP and SIGCONT reach the whole rank
        # The ranks came up: process group initialised over gloo, problem and reference loaded.
        replies = group.collect(60)
        assert [(reply["ok"], reply["event"]) for reply in replies] == [(True, "ready")] * 2, replies
    finally:
        group.close()
    assert [r.proc.returncode for r in group.ranks] == [0, 0]


def test_a_killed_rank_reports_its_signal_and_a_failing_one_its_exit_code(forks_on, tmp_path):
    group = RankGroup("ref", world_size=1, device="cpu", workdir=str(tmp_path / "ref"), trusted=True, **SHAPE)
    group.kill()
    assert group.ranks[0].proc.returncode == -signal.SIGKILL
    # An argument the rank program refuses: argparse's exit status and message, in the rank's own stderr file.
    server = forkserver.server()
    read_fd, write_fd = os.pipe()
    try:
        proc = server.spawn(
            ["--role", "nobody"],
            dict(os.environ),
            str(tmp_path),
            str(tmp_path / "out"),
            str(tmp_path / "err"),
            write_fd,
        )
        assert proc.wait(60) == 2
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert "invalid choice: 'nobody'" in (tmp_path / "err").read_text()


def test_the_server_holds_nothing_of_the_judges_environment(forks_on, monkeypatch, tmp_path):
    monkeypatch.setenv("PKB_PROBE_CREDENTIAL", "s3cret")
    forkserver.reset()
    server = forkserver.server()
    with open(f"/proc/{server.proc.pid}/environ", "rb") as f:
        environ = f.read()
    assert b"s3cret" not in environ and b"PKB_PROBE_CREDENTIAL" not in environ
    assert b"NCCL_NVLS_ENABLE=0" in environ and b"OMP_NUM_THREADS=1" in environ


def test_a_judge_killed_takes_its_server_and_forked_ranks_along(tmp_path):
    script = textwrap.dedent(f"""
        import os, sys, time
        os.environ["{forkserver.SWITCH}"] = "1"
        from evaluator.process import forkserver
        from evaluator.process.group import RankGroup
        group = RankGroup("ref", world_size=2, device="cpu", workdir={str(tmp_path / "ref")!r}, trusted=True,
                          **{SHAPE!r})
        print(forkserver.server().proc.pid, *[r.proc.pid for r in group.ranks], flush=True)
        time.sleep(600)
    """)
    judge = subprocess.Popen([sys.executable, "-c", script], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in judge.stdout.readline().split()]
        assert len(pids) == 3
    finally:
        judge.kill()
        judge.wait()
    assert all(_gone(pid, within=5) for pid in pids), [pid for pid in pids if not _gone(pid, 0)]


def test_a_failing_server_falls_back_to_fresh_processes(forks_on, monkeypatch, tmp_path):
    def refuse(*args, **kwargs):
        raise forkserver.ForkServerError("refused for the test")

    monkeypatch.setattr(forkserver.ForkServer, "spawn", refuse)
    forkserver.reset()
    try:
        group = RankGroup("ref", world_size=1, device="cpu", workdir=str(tmp_path / "ref"), trusted=True, **SHAPE)
        try:
            assert isinstance(group.ranks[0].proc, subprocess.Popen)
            assert _parent(group.ranks[0].proc.pid) == os.getpid()
            assert forkserver.server() is None  # broken for this judge: no second try per rank
        finally:
            group.close()
    finally:
        forkserver.reset()


def test_the_switch_and_the_default_per_device(monkeypatch, tmp_path):
    monkeypatch.delenv(forkserver.SWITCH, raising=False)
    assert forkserver.enabled("cpu") and not forkserver.enabled("cuda")
    monkeypatch.setenv(forkserver.SWITCH, "0")
    assert not forkserver.enabled("cpu")
    group = RankGroup("ref", world_size=1, device="cpu", workdir=str(tmp_path / "ref"), trusted=True, **SHAPE)
    try:
        assert isinstance(group.ranks[0].proc, subprocess.Popen)
    finally:
        group.close()
    monkeypatch.setenv(forkserver.SWITCH, "1")
    assert forkserver.enabled("cuda")


def test_a_request_the_server_never_answers_is_a_rank_gone_not_a_hang(forks_on, tmp_path):
    forkserver.reset()
    server = forkserver.server()
    read_fd, write_fd = os.pipe()
    try:
        os.kill(server.proc.pid, signal.SIGSTOP)  # the request is taken into the socket, never read
        proc = server.spawn(
            ["--role", "nobody"],
            dict(os.environ),
            str(tmp_path),
            str(tmp_path / "out"),
            str(tmp_path / "err"),
            write_fd,
        )
        os.kill(server.proc.pid, signal.SIGKILL)
        assert proc.pid == forkserver.NO_PROCESS  # signalling it reaches no process
        assert proc.wait(10) == -signal.SIGKILL
        server.proc.wait(10)  # its files close a moment before it can be reaped
        assert forkserver.server() is not server  # a dead server is replaced on the next rank
    finally:
        os.close(read_fd)
        os.close(write_fd)
        forkserver.reset()


def test_ranks_lost_with_their_server_are_the_platforms_failure(forks_on, tmp_path):
    forkserver.reset()
    group = RankGroup("ref", world_size=2, device="cpu", workdir=str(tmp_path / "ref"), trusted=True, **SHAPE)
    try:
        group.collect(60)
        os.kill(forkserver.server().proc.pid, signal.SIGKILL)
        with pytest.raises(protocol.GroupFailure) as failure:
            group.command({"cmd": "exit-never-answered"}, timeout=30)
        # An infra_error is retried and never counted; a reference failure of any other kind would be re-run alone
        # and, passing there, blamed on the candidate (evaluator/judge/evaluation.py).
        assert failure.value.kind == "infra_error" and "its fork server died" in failure.value.message
    finally:
        group.close()
        forkserver.reset()


def test_a_judgement_with_fresh_reference_ranks_still_judges(monkeypatch):
    """The path GPU hosts take by default (and every host after a server failure), end to end on a CPU world."""
    from evaluator import judge
    from evaluator.contract import schema

    monkeypatch.setenv(forkserver.SWITCH, "0")
    monkeypatch.setattr(forkserver, "server", lambda: pytest.fail("a rank was forked with the switch off"))
    candidate = os.path.join(os.path.dirname(__file__), "candidates", "allreduce_correct.py")
    result = judge.evaluate(1, candidate, 2, "cpu", M=64, N=32, trials=2, seed=5, timing_budget_ms=40)
    assert result["verdict"] == schema.CORRECT, result["message"]
