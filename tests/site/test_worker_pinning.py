"""Workers pinned to their GPUs (leaderboard/jobs/gpus.py, host_gate.py; the boot in leaderboard/jobs/worker_boot.py): a
worker started for a device set (PKB_GPUS / --gpus) locks each GPU, gives its judges that set as CUDA_VISIBLE_DEVICES,
records its host and refuses a profile the host does not match. The GPUs are simulated: a stand-in nvidia-smi
(tests/evaluator/fake_smi: 8 H200s on NVLink unless told otherwise) and the judge's own record of the
CUDA_VISIBLE_DEVICES it was given; workers boot through dramatiq's real Worker and the one WorkerMiddleware."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import dramatiq
import pytest
from dramatiq.brokers.stub import StubBroker

from evaluator.contract.schema import JudgeRequest
from leaderboard.catalogue.models import HardwareProfile
from leaderboard.jobs import gpus, host_gate, judge_process, judge_service, runner, sandbox_gate
from leaderboard.jobs import worker_boot as bootstrap
from leaderboard.jobs.models import Result

ROOT = Path(__file__).resolve().parents[2]
FAKE_SMI = ROOT / "tests" / "evaluator" / "fake_smi" / "nvidia-smi"


@pytest.fixture
def host(monkeypatch, settings, tmp_path):
    """A host of 8 stand-in H200s, its GPU locks in a directory of this test, the sandbox already decided (its gate
    has tests of its own: test_worker_gate.py) and no host record taken yet."""
    monkeypatch.setenv("PKB_NVIDIA_SMI", str(FAKE_SMI))
    monkeypatch.setattr(sandbox_gate, "_decided", {"support": {"complete": True, "summary": "test host"}})
    monkeypatch.setattr(host_gate, "_records", {})
    settings.PKB_GPU_LOCK_DIR = tmp_path / "gpu-locks"
    settings.PKB_GPUS = ""
    return settings


@pytest.fixture
def boot(host, catalogue):
    """boot(gpus, queues, threads=1) -> (worker, its middleware): one worker of this host, started as the dramatiq CLI
    starts one (its own broker here, so that several can run side by side in this process); stopped after the test."""
    started = []

    def start(devices: str, queues, threads: int = 1):
        host.PKB_GPUS = devices
        broker = StubBroker()
        broker.emit_after("process_boot")
        middleware = bootstrap.WorkerMiddleware()
        broker.add_middleware(middleware)
        for queue in queues:
            broker.declare_queue(queue)
        # Polling its queues every 100 ms (dramatiq's default is 1 s) only makes stop() return sooner.
        worker = dramatiq.Worker(broker, queues=set(queues), worker_threads=threads, worker_timeout=100)
        worker.start()  # before_worker_boot: the gates, which raise to refuse
        started.append(worker)
        return worker, middleware

    yield start
    for worker in started:
        worker.stop(timeout=5000)


def test_two_workers_on_disjoint_gpus_both_start_and_their_judges_see_only_their_own(boot, host, owner, submit, cpu):
    cpu.trials = 1
    cpu.save()
    first, first_middleware = boot("0-3", ["gpu-h200x1", "cpu-gloo"])
    second, second_middleware = boot("4-7", ["gpu-h200x1", "cpu-gloo"])
    assert first_middleware.gpu_locks.devices == [0, 1, 2, 3] and second_middleware.gpu_locks.devices == [4, 5, 6, 7]
    seen = {}
    # Each worker's judge, as its actor starts it (runner.run_job): the first a judge per job, the second its warm
    # long-lived judge (judge_service.py); both are the real judge, which records the devices it was given.
    for devices, spares in (("0-3", 0), ("4-7", 1)):
        host.PKB_GPUS, host.PKB_WARM_SPARES = devices, spares
        job = submit(owner).jobs.get()
        try:
            assert runner.run_job(job.pk, f"worker-{devices}") == "done"
        finally:
            service = getattr(judge_service._local, "service", None)
            if service is not None:
                service.stop()
                judge_service._local.service = None
        document = Result.objects.get(job=job).document
        assert document["verdict"] == "correct", document["message"]
        seen[devices] = document["environment"]["cuda_visible_devices"]
        # Each result carries its worker's host record: its GPUs, their model and driver, the versions.
        record = document["host"]
        assert record["visible"] == seen[devices] and record["torch"]
        assert [g["name"] for g in record["gpus"]] == ["NVIDIA H200"] * 4 and record["driver"] == "580.159.04"
    assert seen == {"0-3": "0,1,2,3", "4-7": "4,5,6,7"}
    assert not set(seen["0-3"].split(",")) & set(seen["4-7"].split(","))


def test_a_worker_overlapping_another_refuses_naming_the_gpu_and_its_holder(boot, host):
    lock_dir = str(host.PKB_GPU_LOCK_DIR)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from leaderboard.jobs import gpus; gpus.claim([2, 3], sys.argv[1]); "
            "print('held', flush=True); sys.stdin.read()",
            lock_dir,
        ],
        cwd=str(ROOT),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(gpus.GpusTaken, match=rf"GPU 2 is held by another worker \(pid {holder.pid} on "):
            boot("0-3", ["gpu-h200x1"])
        gpus.claim([0, 1], lock_dir).release()  # the refused worker kept none of the GPUs it took before GPU 2
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    # The holder is gone (a killed worker too: the kernel drops its locks): its GPUs are free again.
    _, middleware = boot("0-3", ["gpu-h200x1"])
    assert middleware.gpu_locks.held


def test_a_worker_in_the_same_process_cannot_take_a_gpu_twice(boot):
    boot("0-1", ["gpu-h200x1"])
    with pytest.raises(gpus.GpusTaken, match="GPU 1 is held"):
        boot("1-2", ["gpu-h200x1"])


@pytest.mark.parametrize(
    "devices, queue, env, why",
    [
        ("0", "gpu-h200x8", {}, r"W = 8.* runs 8 ranks, one GPU each, and this worker has 1"),
        ("0-3", "feedback-gpu-h200x8", {}, r"queue gpu-h200x8 .* has 4"),  # feedback runs use the worker's GPUs too
        ("0", "gpu-h200x1", {"FAKE_SMI_NAME": "NVIDIA A100-SXM4-80GB"}, r"for NVIDIA H200 GPUs, .* NVIDIA A100"),
        ("0-7", "gpu-h200x8", {"FAKE_SMI_LINK": "SYS"}, r"NVLink\).* by NVLink, and these pairs are not: 0-3 \(SYS\)"),
        ("6-9", "gpu-h200x1", {}, r"devices \[8, 9\] are not on this host"),
    ],
)
def test_a_worker_refuses_a_profile_its_host_does_not_match(boot, host, monkeypatch, devices, queue, env, why):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(host_gate.HostDoesNotMatchProfile, match=why):
        boot(devices, [queue])
    gpus.claim(gpus.parse(devices), host.PKB_GPU_LOCK_DIR).release()  # a refused worker holds no GPU


def test_a_single_gpu_host_serves_the_one_gpu_profile(boot, host, monkeypatch):
    monkeypatch.setenv("FAKE_SMI_GPUS", "1")
    profile = HardwareProfile.objects.get(slug="gpu-h200x1")
    assert (profile.device, profile.world_size, profile.ranked, profile.nvlink) == ("cuda", 1, True, False)
    with pytest.raises(host_gate.HostDoesNotMatchProfile, match="has 1"):
        boot("0", ["gpu-h200x8"])
    boot("0", ["gpu-h200x1", "feedback-gpu-h200x1"])
    record = host_gate.host_record()
    assert record["visible"] == "0" and record["gpus"][0]["uuid"] == "GPU-00000000" and record["links"] == {}


def test_a_matching_worker_starts_and_keeps_its_host_record(boot, host):
    _, middleware = boot("0-7", ["gpu-h200x8"])
    record = host_gate.host_record()
    assert record["visible"] == "0,1,2,3,4,5,6,7" and len(record["links"]) == 28
    assert set(record["links"].values()) == {"NV18"} and "refused" not in record
    assert middleware.gpu_locks.devices == list(range(8))


def test_a_pinned_worker_runs_one_job_at_a_time_on_its_gpus(boot):
    with pytest.raises(host_gate.HostDoesNotMatchProfile, match="one job at a time.* 2 threads"):
        boot("0-3", ["gpu-h200x1"], threads=2)


def test_a_stopped_worker_frees_its_gpus(boot, host):
    worker, middleware = boot("0-1", ["gpu-h200x1"])
    worker.stop(timeout=5000)
    assert middleware.gpu_locks is None
    gpus.claim([0, 1], host.PKB_GPU_LOCK_DIR).release()


def test_an_infra_error_carries_the_host_record_too(boot, host, owner, submit, monkeypatch):
    boot("4-5", ["cpu-gloo"])
    # The judge crashes: only the command the runner starts is replaced (as in test_runner.py).
    monkeypatch.setattr(JudgeRequest, "command", lambda request: [sys.executable, "-c", "import sys; sys.exit(3)"])
    job = submit(owner).jobs.get()
    assert runner.run_job(job.pk, "w") == "infra_error"
    result = Result.objects.get(job=job)
    assert result.verdict == "infra_error" and result.document["host"]["visible"] == "4,5"


def test_a_feedback_run_carries_the_host_record_as_a_job_does(boot, host, owner, cpu, monkeypatch):
    from leaderboard.feedback import runner as feedback_runner
    from leaderboard.feedback import services as feedback_services

    boot("6-7", ["cpu-gloo"])
    # A judge that writes a document without judging: what is under test is what the runner adds to it.
    writes = "import json, sys; json.dump({'verdict': 'correct', 'message': 'ok', 'flags': []}, open(sys.argv[1], 'w'))"
    monkeypatch.setattr(JudgeRequest, "command", lambda request: [sys.executable, "-c", writes, request.json_out])
    session = feedback_services.session_open(owner.submitter, "cpu-gloo", "pinned")
    run = feedback_services.run_create(owner.submitter, session.pk, "1", "def solution(x):\n    return x\n")
    assert feedback_runner.run_feedback(run.pk, "w") == "done"
    run.refresh_from_db()
    assert run.document["host"]["visible"] == "6,7" and run.document["host"]["driver"] == "580.159.04"


def test_an_unpinned_worker_keeps_the_environments_devices_and_takes_no_lock(boot, host, monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5")
    _, middleware = boot("", ["cpu-gloo"])
    assert middleware.gpu_locks is None and not host.PKB_GPU_LOCK_DIR.exists()
    assert judge_process.judge_env(tmp_path)["CUDA_VISIBLE_DEVICES"] == "5"
    host.PKB_GPUS = "0,2"
    env = judge_process.judge_env(tmp_path)
    assert env["CUDA_VISIBLE_DEVICES"] == "0,2" and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


@pytest.mark.parametrize("bad", ["a", "3-1", "0,0", "1-2,2", "-1"])
def test_a_bad_gpu_set_stops_the_worker(boot, bad):
    with pytest.raises(gpus.BadGpuSet):
        boot(bad, ["cpu-gloo"])


def test_runserver_with_worker_pins_its_worker(host, monkeypatch):
    from django.core.management import CommandError, call_command

    from leaderboard.management.commands import runserver_with_worker

    class Started(Exception):
        pass

    seen = []

    def start_worker(queues):
        seen.append((queues, gpus.spec()))
        raise Started

    host.PKB_SERVE_STATIC = False
    monkeypatch.setattr(runserver_with_worker, "start_worker", start_worker)
    with pytest.raises(CommandError, match="not a device index"):
        call_command("runserver_with_worker", "--gpus", "x", "--queues", "gpu-h200x1")
    assert seen == []  # refused before anything started
    with pytest.raises(Started):
        call_command("runserver_with_worker", "--gpus", "0", "--queues", "gpu-h200x1,feedback-gpu-h200x1")
    assert seen == [(["gpu-h200x1", "feedback-gpu-h200x1"], "0")]


def test_existing_h200x8_rows_learn_they_need_nvlink(catalogue):
    migration = importlib.import_module("leaderboard.catalogue.migrations.0003_profile_nvlink")
    HardwareProfile.objects.filter(slug="gpu-h200x8").update(nvlink=False)  # as a row made before the field
    from django.apps import apps

    migration.h200x8_needs_nvlink(apps, None)
    assert HardwareProfile.objects.get(slug="gpu-h200x8").nvlink
    assert not HardwareProfile.objects.get(slug="gpu-h200x1").nvlink


def test_a_build_worker_holds_no_gpu_even_when_pinned(boot, host):
    """Builds run with no GPU visible (the stage hides them): a worker serving only build queues leaves the GPUs to
    the host's judging workers, even if started with the same PKB_GPUS."""
    _, builder = boot("0-1", ["build-gpu-h200x1"])
    assert builder.gpu_locks is None
    _, judging = boot("0-1", ["gpu-h200x1"])
    assert judging.gpu_locks.held


def test_the_judge_builds_for_the_stages_architecture_with_the_stages_cache(host, monkeypatch, tmp_path):
    """The architecture list and the build cache are part of what makes a job find the stage's build: a judge gets
    PKB_BUILD_ARCH as TORCH_CUDA_ARCH_LIST whatever the worker's environment says, and the worker's build cache."""
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0a")
    monkeypatch.setenv("PKB_BUILD_CACHE", str(tmp_path / "cache"))
    host.PKB_BUILD_ARCH = ""
    assert judge_process.judge_env(tmp_path)["TORCH_CUDA_ARCH_LIST"] == "9.0a"
    host.PKB_BUILD_ARCH = "9.0"
    env = judge_process.judge_env(tmp_path)
    assert env["TORCH_CUDA_ARCH_LIST"] == "9.0" and env["PKB_BUILD_CACHE"] == str(tmp_path / "cache")
