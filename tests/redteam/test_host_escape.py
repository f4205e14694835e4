"""Escape from a job to the host it runs on: ancestors' environments, /etc/shadow, the site's files, Unix sockets,
writes into the source tree, files and processes left after the job. See docs/threat-model.md, section E.

These run as root (CI does), where the complete sandbox must be there: a host that cannot give it fails
test_the_sandbox_is_complete_here instead of skipping the rest."""

import json
import os
import socket
import subprocess
import sys
import threading
import time

from evaluator.contract import schema
from evaluator.process import sandbox
from tests.redteam.harness import (
    CANDIDATES,
    from_template,
    logs,
    notes,
    probe_lines,
    processes_with,
    requires_root,
    run,
    sandbox_reason,
    token,
)

REPO = CANDIDATES.parents[2]


@requires_root
def test_the_sandbox_is_complete_here():
    assert sandbox_reason() is None, sandbox_reason()


class _Listener:
    """A Unix socket (a path anyone may connect to, and an abstract name) that records every connection."""

    def __init__(self, path: str, abstract: str):
        self.hits: list[str] = []
        self.servers = []
        for address in (path, "\0" + abstract):
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(address)
            server.listen(8)
            server.settimeout(0.2)
            self.servers.append(server)
        os.chmod(path, 0o777)
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._accept, args=(s,), daemon=True) for s in self.servers]
        for t in self.threads:
            t.start()

    def _accept(self, server):
        while not self.stop.is_set():
            try:
                conn, _ = server.accept()
                self.hits.append(str(server.getsockname()))
                conn.close()
            except OSError:
                pass

    def close(self):
        self.stop.set()
        for t in self.threads:
            t.join(2)
        for s in self.servers:
            s.close()


@requires_root
def test_a_candidate_reaches_nothing_of_the_host(tmp_path):
    tag = token()
    secret = "s3cr3t-" + tag
    sock_path = f"/tmp/pkb-redteam-sock-{tag}"
    listener = _Listener(sock_path, f"pkb-redteam-{tag}")
    path = from_template(
        tmp_path,
        "probes_host",
        SECRET=secret,
        SOCKET_PATH=sock_path,
        ABSTRACT_NAME=f"pkb-redteam-{tag}",
        REPO=REPO,
        TAG=tag,
    )
    out = tmp_path / "result.json"
    # The judge is its own process (the CLI) with the secret in its environment from the start, as a worker's judge
    # has DATABASE_URL: /proc/<judge>/environ holds it.
    env = dict(
        os.environ, PKB_REDTEAM_SECRET=secret, DATABASE_URL=f"postgres://u:{secret}@db/x", DJANGO_SECRET_KEY=secret
    )
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "evaluator",
                "eval",
                "1",
                path,
                "-W",
                "2",
                "--M",
                "64",
                "--N",
                "32",
                "--trials",
                "1",
                "--no-timing",
                "--seed",
                "5",
                "--json",
                str(out),
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
        result = json.loads(out.read_text())
        time.sleep(0.3)
        survivors = processes_with(f"pkb-redteam-{tag}")
    finally:
        listener.close()
        os.unlink(sock_path)
        for pid in processes_with(f"pkb-redteam-{tag}"):
            os.kill(pid, 9)
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert notes(result)["complete"] is True, notes(result)
    probes = probe_lines(logs(result))
    assert probes.get("environ") == "refused", probes
    assert secret not in logs(result)
    for name in ("/etc/shadow", "/etc/gshadow", f"{REPO}/leaderboard/settings.py", f"{REPO}/manage.py", f"{REPO}/var"):
        assert probes[f"read {name}"].startswith("refused"), (name, probes)
    assert probes["unix sockets"].startswith("refused"), probes
    assert listener.hits == []
    for where in ("leaderboard", "problems"):
        target = f"{REPO}/{where}/canary_{tag}.py"
        assert probes[f"write {target}"].startswith("refused"), probes
        assert not os.path.exists(target)
    # Writable inside (its own /tmp and /dev/shm), gone from the host after the job.
    assert probes["leave /dev/shm"] == "WROTE" and probes["leave /tmp"] == "WROTE", probes
    for place in ("/dev/shm", "/tmp", "/var/tmp"):
        assert not os.path.exists(f"{place}/pkb-redteam-left-{tag}")
    assert probes["daemon"] == "started" and survivors == []
    assert notes(result)["cleanup"]["killed_outliving"] >= 1


@requires_root
def test_no_shared_directory_of_a_job_is_left_on_the_host(tmp_path):
    before = {e for e in os.listdir("/dev/shm") if e.startswith("pkb-shm-")}
    result = run("honest_sandbox_citizen")
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert {e for e in os.listdir("/dev/shm") if e.startswith("pkb-shm-")} <= before


def test_a_required_sandbox_the_host_cannot_give_is_an_infra_error(monkeypatch):
    # No candidate code may run; the message names what is missing; nothing is retried without the sandbox.
    monkeypatch.setattr(
        sandbox, "_probe_cache", {"view": "bwrap is not installed (simulated)", "result": "simulated: no separate uid"}
    )
    result = run("honest_allreduce", sandbox_required=True)
    assert result["verdict"] == schema.INFRA_ERROR, result["message"]
    assert "sandbox unavailable" in result["message"] and "simulated" in result["message"]
    assert result["attempts"] == 1 and result["trials"] == []


def test_without_a_complete_sandbox_a_result_is_flagged_and_never_ranks(monkeypatch):
    monkeypatch.setattr(
        sandbox, "_probe_cache", {"view": "bwrap is not installed (simulated)", "result": "simulated: no separate uid"}
    )
    result = run("honest_allreduce")
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert schema.FLAG_UNSANDBOXED in result["flags"]
    assert notes(result)["complete"] is False
    assert notes(result)["summary"].startswith("UNSANDBOXED")
