"""The production topology, run as it runs (no Docker: each process started with its systemd unit's command line,
deploy/systemd/, read by tests/test_layout_parity.py's unit_argv): gunicorn on PostgreSQL, RabbitMQ, a judging
worker, a build worker and a feedback worker, each its own process. `pkb submit` uploads a file (it names a compile
call, so the build worker takes it first); the judging worker is killed with SIGKILL while it judges, and its restart
finishes the job (the boot sweep ends the dead worker's lease and the job is claimed again); `pkb feedback` runs a
feedback run; /metrics, the workers' own metrics and the Workers page show it all. Lean: the cpu-gloo kind of
profile (W = 2, one trial), problem 1 at its reduced shapes, short leases."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from django.db import connection

from leaderboard.catalogue.models import HardwareProfile
from leaderboard.jobs.models import EvaluationJob, Result
from leaderboard.ops.models import WorkerRecord
from tests.site.conftest import GOOD_1
from tests.site.integration.test_job_lifecycle import RABBIT_URL, database_url, make_broker, processes_with
from tests.test_layout_parity import unit_argv

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
TOKEN = "metrics-" + uuid.uuid4().hex


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Topology:
    """The processes, each in its own session (SIGKILL reaches its whole group), with their logs."""

    def __init__(self, tmp: Path, profile: str):
        self.tmp, self.profile = tmp, profile
        self.procs: dict[str, subprocess.Popen] = {}
        self.began = time.monotonic()
        self.env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
        self.env.update(
            DJANGO_SETTINGS_MODULE="leaderboard.settings",
            DATABASE_URL=database_url(),
            BROKER_URL=RABBIT_URL,
            DJANGO_SECRET_KEY="topology-" + uuid.uuid4().hex,
            PKB_DATA_DIR=str(tmp / "data"),
            PYTHONPATH=str(ROOT),
            PKB_QUEUES=profile,
            PKB_BUILD_STAGE="all",
            PKB_LEASE_SECONDS="6",
            PKB_HEARTBEAT_SECONDS="1",
            PKB_REAPER_INTERVAL_SECONDS="1",
            PKB_WORKER_HEARTBEAT_SECONDS="1",
            PKB_TRUSTED_PROXIES="0",
            PKB_METRICS_TOKEN=TOKEN,
            DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
            PKB_LOG_LEVEL="INFO",
            PKB_GPU_LOCK_DIR=str(tmp / "gpus"),
        )

    def start(self, name: str, argv: list[str], **env: str) -> subprocess.Popen:
        argv = [str(BIN / Path(argv[0]).name), *argv[1:]]  # /opt/venv/bin/X -> this environment's X
        log = open(self.tmp / f"{name}.log", "ab")
        proc = subprocess.Popen(
            argv, cwd=str(ROOT), env={**self.env, **env}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.procs[name] = proc
        return proc

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.kill(name)

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-2500:]}" for p in sorted(self.tmp.glob("*.log"))
        )

    def wait_for(self, predicate, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                print(f"{time.monotonic() - self.began:6.1f} s: {what}", flush=True)  # where the time goes (-s)
                return value
            time.sleep(0.3)
        records = list(WorkerRecord.objects.values("worker", "state", "queues", "refusal"))
        raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{records}\n{self.logs()}")


def get(url: str, token: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return 0, ""


def sample(text: str, family: str, **labels: str) -> float | None:
    """The value of one sample of the exposition ``text``, found by its family name and labels."""
    for line in text.splitlines():
        match = re.match(rf"{re.escape(family)}{{(.*)}} (\S+)$", line)
        if match and all(f'{k}="{v}"' in match.group(1) for k, v in labels.items()):
            return float(match.group(2))
    return None


@pytest.fixture
def profile(catalogue):
    if connection.vendor != "postgresql":
        pytest.skip("the topology runs its processes on PostgreSQL")
    return HardwareProfile.objects.create(
        slug=f"topo-{uuid.uuid4().hex[:8]}",
        name="topology",
        device="cpu",
        world_size=2,
        ranked=False,
        trials=1,
        accepting=True,
    )


@pytest.fixture
def topology(profile, tmp_path):
    site = Topology(tmp_path, profile.slug)
    yield site
    site.stop_all()
    broker = make_broker(RABBIT_URL)
    try:
        for queue in (profile.slug, f"build-{profile.slug}", f"feedback-{profile.slug}"):
            for name in (queue, f"{queue}.DQ", f"{queue}.XQ"):
                broker.channel.queue_delete(name)
    except Exception:  # noqa: BLE001 - best effort: the names are this test's own
        pass
    broker.close()


def test_the_deploy_units_run_a_submission_a_killed_worker_and_a_feedback_run(
    topology, profile, owner, staff, client, settings, tmp_path
):
    from leaderboard.accounts import services as accounts_services

    slug = profile.slug
    port, worker_metrics = free_port(), free_port()
    site = f"http://127.0.0.1:{port}"
    web = unit_argv("pkb-web.service", None, {})
    web[web.index("-b") + 1], web[web.index("-w") + 1] = f"127.0.0.1:{port}", "2"  # 2 processes on a 2-core host
    topology.start("web", web)
    judging = unit_argv("pkb-gpu-worker@.service", "", {"PKB_WORKER_QUEUES": slug})  # a CPU profile: not pinned
    topology.start("judging", judging, PKB_GPUS="", PKB_WORKER_METRICS_PORT=str(worker_metrics))
    topology.start("build", unit_argv("pkb-build-worker@.service", slug, {"PKB_BUILD_THREADS": "1"}), PKB_GPUS="")
    topology.start(
        "feedback", unit_argv("pkb-gpu-worker@.service", "", {"PKB_WORKER_QUEUES": f"feedback-{slug}"}), PKB_GPUS=""
    )
    topology.wait_for(lambda: get(f"{site}/readyz")[0] == 200, 60, "gunicorn's /readyz")
    queues = [[slug], [f"build-{slug}"], [f"feedback-{slug}"]]
    topology.wait_for(
        lambda: sorted(WorkerRecord.objects.filter(state="running").values_list("queues", flat=True)) == sorted(queues),
        90,
        "the three workers' records",
    )

    # pkb submit, through gunicorn: the file names a compile call, so the build worker runs it first.
    token = accounts_services.token_create(owner.submitter, "topology", ["read", "submit"])[1]
    upload = tmp_path / "upload"
    upload.mkdir()
    (upload / "1_allreduce_torch.py").write_bytes(GOOD_1 + b"\n# the build stage is asked first: load_inline\n")
    done = subprocess.run(
        [
            str(BIN / "pkb"),
            "submit",
            str(upload),
            "--model",
            "topology",
            "--profile",
            slug,
            "--protocol",
            "one_shot",
            "--attempts",
            "1",
            "--agent",
            "topology-test",
            "--agent-version",
            "1",
            "--url",
            site,
            "--token",
            token,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    job = EvaluationJob.objects.get(profile=profile)  # the one file of the one submission on this profile

    # A feedback run on the feedback worker, through `pkb feedback` (it waits for the verdict; collected below).
    common = ["--url", site, "--token", token]
    opened = subprocess.run(
        [str(BIN / "pkb"), "feedback", "open", "--profile", slug, *common], capture_output=True, text=True, timeout=60
    )
    assert opened.returncode == 0, opened.stdout + opened.stderr
    (tmp_path / "fb.py").write_bytes(GOOD_1)
    asked = subprocess.Popen(
        [
            str(BIN / "pkb"),
            "feedback",
            "1",
            str(tmp_path / "fb.py"),
            "--session",
            opened.stdout.strip(),
            "--M",
            "64",
            "--N",
            "64",
            "--json",
            str(tmp_path / "fb.json"),
            *common,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    # The judging worker dies with SIGKILL while its judge runs; restarted, it finds its dead self's lease.
    topology.wait_for(
        lambda: (
            EvaluationJob.objects.filter(pk=job.pk, status="running", build_status="nothing_built").exists()
            and processes_with(f"job{job.pk}-")
        ),
        120,
        "the judged run to start after its build",
    )
    topology.kill("judging")
    topology.wait_for(lambda: not processes_with(f"job{job.pk}-"), 30, "the judge to die with its worker")
    topology.start("judging", judging, PKB_GPUS="", PKB_WORKER_METRICS_PORT=str(worker_metrics))
    topology.wait_for(
        lambda: EvaluationJob.objects.filter(pk=job.pk, status="done").exists(),
        120,
        "the restarted worker to finish the job",
    )
    job.refresh_from_db()
    assert job.attempts == 2 and job.build_status == "nothing_built"
    assert [r.verdict for r in Result.objects.filter(job=job).order_by("id")] == ["infra_error", "correct"]
    assert "lease expired" in Result.objects.filter(job=job, verdict="infra_error").get().message

    # The feedback run, asked for while the job is judged (lean: the feedback worker works beside the others).
    out, err = asked.communicate(timeout=180)
    assert asked.returncode == 0, out + err + topology.logs()
    assert json.loads((tmp_path / "fb.json").read_text())["feedback"]["verdict"] == "correct"

    # /metrics: refused without the token; with it, every family, with this run's numbers.
    assert get(f"{site}/metrics")[0] == 403
    status, text = get(f"{site}/metrics", TOKEN)
    assert status == 200
    assert sample(text, "pkb_jobs", status="done", profile=slug) == 1
    assert sample(text, "pkb_feedback_runs", status="done", profile=slug) == 1
    assert sample(text, "pkb_queue_depth", queue=slug) == 0
    assert sample(text, "pkb_results_total", verdict="correct", profile=slug) == 1
    assert sample(text, "pkb_infra_errors_total", profile=slug) == 1
    assert sample(text, "pkb_lease_expiries_total", profile=slug) == 1
    assert sample(text, "pkb_lease_reclaims_total", kind="job", profile=slug) == 1
    assert sample(text, "pkb_build_stage", status="nothing_built", profile=slug) == 1
    assert sample(text, "pkb_job_wall_seconds_count", profile=slug) == 1
    assert sample(text, "pkb_job_gpu_held_seconds_bucket", profile=slug, le="+Inf") == 1
    assert sample(text, "pkb_worker_last_heartbeat_timestamp_seconds", host=socket.gethostname(), state="running")
    # The restarted judging worker's own metrics: the messages it took (the job's, and the killed worker's unacked
    # one, redelivered and found already claimed).
    status, own = get(f"http://127.0.0.1:{worker_metrics}/metrics")
    assert status == 200 and sample(own, "pkb_worker_messages_total", actor="evaluate_job", outcome="done") >= 1
    assert sample(own, "pkb_worker_message_seconds_count", actor="evaluate_job") >= 1

    # The Workers page: the three live workers (the killed one silent), what they serve.
    settings.PKB_WORKER_HEARTBEAT_SECONDS = 1  # as the processes beat: silent after 3 s
    client.force_login(staff)
    page = client.get("/ops/workers/").content.decode()
    ours = [r for r in WorkerRecord.objects.all() if {slug, f"build-{slug}", f"feedback-{slug}"} & set(r.queues)]
    assert sorted(r.state for r in ours) == ["running"] * 4  # the killed one was never marked stopped
    for record in ours:
        assert record.worker in page
    assert page.count('class="worker-live"') >= 3 and 'class="worker-silent"' in page, page
