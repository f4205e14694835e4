"""A GPU worker's host record and the profile check (evaluator/judge/hosts.py), with a stand-in nvidia-smi: workers
pinned to disjoint device sets, and a worker refusing a profile its devices do not match."""

import pathlib

import pytest

from evaluator.contract import requests as contract
from evaluator.judge import hosts

FAKE = pathlib.Path(__file__).parent / "fake_smi" / "nvidia-smi"


@pytest.fixture(autouse=True)
def fake_smi(monkeypatch):
    monkeypatch.setenv("PKB_NVIDIA_SMI", str(FAKE))


def test_device_sets_parse_and_refuse_nonsense():
    assert contract.device_set("0-3") == [0, 1, 2, 3]
    assert contract.device_set("0,2,4-5") == [0, 2, 4, 5]
    for bad in ("", "a", "3-1", "0,0", "1-2,2", "-1", "0-"):
        with pytest.raises(contract.BadDeviceSet):
            contract.device_set(bad)


def test_two_workers_on_disjoint_sets_record_disjoint_gpus():
    a, b = hosts.record(contract.device_set("0-3")), hosts.record(contract.device_set("4-7"))
    assert a["visible"] == "0,1,2,3" and b["visible"] == "4,5,6,7"
    assert not {g["uuid"] for g in a["gpus"]} & {g["uuid"] for g in b["gpus"]}
    assert a["links"]["0-1"] == "NV18" and len(a["links"]) == 6 and b["links"]["4-7"] == "NV18"


def test_a_matching_host_serves_the_profile():
    host = hosts.record(contract.device_set("0-3"))
    assert hosts.mismatch(host, 4, "H200", nvlink=True) is None
    assert hosts.mismatch(hosts.record([5]), 1, "H200") is None


def test_a_worker_refuses_a_profile_its_devices_do_not_match(monkeypatch):
    assert "has 2" in hosts.mismatch(hosts.record([0, 1]), 8, "H200")
    assert "not on this host" in hosts.mismatch(hosts.record([0, 9]), 2)
    monkeypatch.setenv("FAKE_SMI_NAME", "NVIDIA A100-SXM4-80GB")
    assert "A100" in hosts.mismatch(hosts.record([0]), 1, "H200")
    monkeypatch.setenv("FAKE_SMI_NAME", "NVIDIA H200")
    monkeypatch.setenv("FAKE_SMI_LINK", "SYS")
    assert "0-3 (SYS)" in hosts.mismatch(hosts.record(contract.device_set("0-3")), 4, "H200", nvlink=True)


def test_no_nvidia_smi_is_a_host_without_gpus(monkeypatch):
    monkeypatch.setenv("PKB_NVIDIA_SMI", "/nonexistent/nvidia-smi")
    host = hosts.record([0])
    assert host["gpus"] == [] and host["missing"] == [0]
    assert hosts.mismatch(host, 1) is not None


def test_pkb_host_prints_the_record_and_refuses_a_mismatch():
    import json
    import subprocess
    import sys

    root = pathlib.Path(__file__).parents[2]
    ok = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluator",
            "host",
            "--gpus",
            "4-7",
            "--ranks",
            "4",
            "--gpu-model",
            "H200",
            "--nvlink",
            "--json",
        ],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["visible"] == "4,5,6,7" and json.loads(ok.stdout)["refused"] is None
    refused = subprocess.run(
        [sys.executable, "-m", "evaluator", "host", "--gpus", "0", "--ranks", "8"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 1 and "has 1" in refused.stdout
