"""Escape: secrets, network, writes outside the scratch directory, processes outliving the job, NVLink multicast
hidden from the static scan, filling the disk, killing the reference. See docs/threat-model.md, section E."""

import json
import os
import socket
import subprocess
import sys
import threading
import time

from evaluator.contract import schema
from evaluator.judge import policy
from evaluator.process import sandbox
from tests.redteam.harness import (
    CANDIDATES,
    from_template,
    logs,
    notes,
    own_network,
    processes_with,
    requires_root,
    run,
    separate_uid,
    token,
)

REPO = CANDIDATES.parents[2]


def test_honest_candidate_works_inside_the_sandbox():
    result = run("honest_sandbox_citizen")
    assert result["verdict"] == schema.CORRECT, result["message"] + logs(result)[-2000:]
    assert notes(result)["enabled"] is True and "user" in notes(result) and "network" in notes(result)
    if os.geteuid() == 0:  # CI: the whole sandbox, and so no flag
        assert notes(result)["complete"] is True, notes(result)["summary"]
        assert schema.FLAG_UNSANDBOXED not in result["flags"]


def test_secrets_in_the_judges_environment_stay_there(tmp_path):
    # The judge runs as a separate process (the CLI) with the secret in its environment from the start, so that
    # /proc/<judge>/environ holds it too.
    secret = "s3cr3t-" + token()
    env = dict(os.environ, PKB_REDTEAM_SECRET=secret, AWS_SECRET_ACCESS_KEY=secret, DATABASE_URL=f"postgres://{secret}")
    out = tmp_path / "result.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluator",
            "eval",
            "1",
            str(CANDIDATES / "reads_secrets.py"),
            "-W",
            "2",
            "--M",
            "64",
            "--N",
            "32",
            "--trials",
            "2",
            "--no-timing",
            "--seed",
            "3",
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
    assert result["verdict"] == schema.CORRECT, result["message"]
    text = logs(result)
    assert "credential-like variables visible: []" in text  # the allow-list environment
    if os.geteuid() == 0:
        assert separate_uid(result), notes(result)
    if separate_uid(result):
        assert secret not in text  # not even through /proc/<judge pid>/environ
    else:
        # Without a separate uid a root candidate can read any /proc/PID/environ: the documented limit.
        assert "LEAK from own environment" not in text


@requires_root
def test_no_network_beyond_the_groups_own_loopback(tmp_path):
    hits = []
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", 0))
    server.listen(8)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conn, peer = server.accept()
                hits.append(peer)
                conn.close()
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    addresses = ["127.0.0.1"] + [a for a in _host_addresses() if not a.startswith("127.")]
    try:
        result = run(from_template(tmp_path, "opens_network", TARGETS=",".join(addresses), PORT=port))
    finally:
        stop.set()
        thread.join(2)
        server.close()
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert own_network(result), notes(result)
    assert hits == [], hits
    assert "CONNECTED" not in logs(result) and "interfaces ['lo']" in logs(result)


def _host_addresses():
    try:
        return sorted({info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)})
    except OSError:
        return []


@requires_root
def test_no_writes_outside_the_scratch_directory(tmp_path):
    drop_dir = tmp_path / "judge-owned"
    drop_dir.mkdir()
    drop_dir.chmod(0o755)
    canary = drop_dir / "canary.txt"
    canary.write_text("original\n")
    canary.chmod(0o644)
    tmp_path.chmod(0o755)
    tag = token()
    tmp_drop = f"/tmp/pkb-redteam-drop-{tag}"
    repo_drop = REPO / "problems" / f"_pkb_redteam_{tag}.py"
    path = from_template(
        tmp_path, "writes_outside_scratch", CANARY=canary, DROP_DIR=drop_dir, TMP_DROP=tmp_drop, REPO_DROP=repo_drop
    )
    try:
        result = run(path)
        assert result["verdict"] == schema.CORRECT, result["message"]
        assert separate_uid(result)
        text = logs(result)
        assert canary.read_text() == "original\n"
        assert sorted(p.name for p in drop_dir.iterdir()) == ["canary.txt"]
        assert not repo_drop.exists()
        assert "WROTE tmp" in text and not os.path.exists(tmp_drop)  # allowed by /tmp's mode, removed at the end
        assert "WROTE scratch" in text
        for what in ("canary", "drop dir", "repository", "reference dir"):
            assert f"refused {what}" in text, text
    finally:
        for leftover in (repo_drop, tmp_drop):
            if os.path.exists(leftover):
                os.unlink(leftover)


def test_no_process_outlives_the_job(tmp_path):
    marker = "pkb-redteam-daemon-" + token()
    heartbeat = f"/tmp/{marker}"
    result = run(from_template(tmp_path, "spawns_daemon", HEARTBEAT=heartbeat, MARKER=marker))
    try:
        assert result["verdict"] == schema.CORRECT, result["message"]
        time.sleep(0.3)
        survivors = processes_with(marker)
        if os.geteuid() == 0:
            assert separate_uid(result), notes(result)
        if separate_uid(result):
            assert survivors == []  # both, the one with a clean environment too
        else:
            # Without a separate uid only the daemon that kept the job's environment can be found.
            assert len(survivors) <= 1
        for suffix in ("-env",) + (("-clean",) if separate_uid(result) else ()):
            before = _state(heartbeat + suffix)
            time.sleep(0.3)
            assert _state(heartbeat + suffix) == before, f"daemon{suffix} is still writing"
        assert notes(result)["cleanup"]["killed_outliving"] >= 1
    finally:
        for pid in processes_with(marker):
            os.kill(pid, 9)
        for suffix in ("-env", "-clean"):
            if os.path.exists(heartbeat + suffix):
                os.unlink(heartbeat + suffix)


def _state(path):
    try:
        return os.stat(path).st_mtime_ns
    except FileNotFoundError:
        return None


def test_obfuscated_multicast_passes_the_static_scan_but_the_runtime_switches_hold():
    source = (CANDIDATES / "multicast_obfuscated.py").read_text()
    assert policy.scan(source, multicast_allowed=False) is None  # the documented limit of static scanning
    result = run("multicast_obfuscated")
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert "NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1" in logs(result)


def test_filling_the_disk_is_stopped_by_the_file_size_limit(monkeypatch):
    monkeypatch.setattr(sandbox, "FILE_SIZE_LIMIT", 16 * 2**20)  # keep the test cheap: 16 MiB instead of 2 GiB
    result = run("fills_disk")
    assert result["verdict"] == schema.RUNTIME_ERROR, result["message"]
    # Python ignores SIGXFSZ, so the write fails with EFBIG instead of the process being killed.
    assert "File too large" in result["message"] or "SIGXFSZ" in result["message"]


@requires_root
def test_killing_the_reference_is_refused_by_the_sandbox():
    result = run("kills_reference")
    assert result["verdict"] == schema.CORRECT, result["message"]
    text = logs(result)
    # Inside its box's pid namespace the candidate does not even find the reference's ranks.
    assert "kills_reference: 0 reference ranks visible" in text and "KILLED" not in text, text[-2000:]


def test_killing_the_reference_without_the_sandbox_is_blamed_on_the_candidate():
    result = run("kills_reference", sandbox=False)
    assert result["verdict"] == schema.RUNTIME_ERROR, result["message"]
    assert "interfered with the reference" in result["message"]
    assert "KILLED" in logs(result) and result["attempts"] == 1
    assert notes(result)["enabled"] is False
