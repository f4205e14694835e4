"""/metrics (leaderboard/ops/metrics.py, views.py): who may read it, and that each family says what the rows say;
/readyz; the staff's Workers page; a worker's record at boot, at a refusal and by its heartbeat."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from leaderboard.ops.models import WorkerRecord
from tests.site.conftest import judge_document
from tests.site.integration.test_production_topology import sample

pytestmark = pytest.mark.django_db
TOKEN = "scrape-token-of-this-test"


@pytest.fixture
def scrape(client, settings):
    settings.PKB_METRICS_TOKEN = TOKEN
    settings.PKB_METRICS_ALLOWED_NETWORKS = []

    def get(**headers):
        return client.get("/metrics", **headers)

    return get


def test_metrics_need_the_token_or_an_allowed_address(scrape, settings):
    assert scrape().status_code == 403
    assert scrape(HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    assert scrape(HTTP_AUTHORIZATION=f"Basic {TOKEN}").status_code == 403
    ok = scrape(HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert ok.status_code == 200 and ok["Content-Type"].startswith("text/plain; version=0.0.4")
    settings.PKB_METRICS_TOKEN = ""  # no token configured: an empty bearer is not a key
    assert scrape(HTTP_AUTHORIZATION="Bearer ").status_code == 403
    import ipaddress

    settings.PKB_METRICS_ALLOWED_NETWORKS = [ipaddress.ip_network("10.0.0.0/8")]
    assert scrape(REMOTE_ADDR="10.1.2.3").status_code == 200
    assert scrape(REMOTE_ADDR="192.0.2.1").status_code == 403
    # Behind no stated proxy a forged X-Forwarded-For is not read.
    assert scrape(REMOTE_ADDR="192.0.2.1", HTTP_X_FORWARDED_FOR="10.1.2.3").status_code == 403


def test_a_malformed_allowed_address_stops_start_up(monkeypatch):
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        capture_output=True,
        text=True,
        env={
            "PATH": "/usr/bin:/bin",
            "DJANGO_SETTINGS_MODULE": "leaderboard.settings",
            "DJANGO_SECRET_KEY": "x",
            "PKB_METRICS_ALLOWED_IPS": "10.0.0.0/8,not-an-address",
            "PKB_DATA_DIR": "/tmp/pkb-metrics-test",
        },
        timeout=120,
    )
    assert done.returncode != 0 and "PKB_METRICS_ALLOWED_IPS" in done.stderr


def test_each_family_counts_the_rows(scrape, submit, owner, finish, cpu):
    from leaderboard.jobs.models import EvaluationJob

    first = submit(owner).jobs.get()
    finish(first, judge_document("correct") | {"wall_s": 7.0})
    second = submit(owner).jobs.get()
    finish(second, judge_document("wrong") | {"wall_s": 200.0})
    queued = submit(owner).jobs.get()
    EvaluationJob.objects.filter(pk=queued.pk).update(attempts=2)  # re-claimed once, back in the queue
    EvaluationJob.objects.filter(pk=second.pk).update(build_status="nothing_built")
    now = timezone.now()
    WorkerRecord.objects.create(
        worker="h:1:a",
        hostname="gpu-host-a",
        pid=1,
        gpus="0-3",
        queues=["cpu-gloo"],
        profiles=["cpu-gloo"],
        booted_at=now,
        last_heartbeat_at=now - timedelta(seconds=5),
    )
    WorkerRecord.objects.create(
        worker="h:2:b",
        hostname="gpu-host-a",
        pid=2,
        gpus="0-3",
        queues=["cpu-gloo"],
        state="refused",
        refusal="GPU 2 is held by another worker",
        booted_at=now,
    )
    text = scrape(HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode()

    assert sample(text, "pkb_jobs", status="done", profile="cpu-gloo") == 2
    assert sample(text, "pkb_jobs", status="queued", profile="cpu-gloo") == 1
    assert sample(text, "pkb_queue_depth", queue="cpu-gloo") == 1
    assert sample(text, "pkb_queue_depth", queue="build-cpu-gloo") == 0
    assert sample(text, "pkb_results_total", verdict="correct", profile="cpu-gloo") == 1
    assert sample(text, "pkb_results_total", verdict="wrong", profile="cpu-gloo") == 1
    assert sample(text, "pkb_job_wall_seconds_bucket", profile="cpu-gloo", le="15.0") == 1
    assert sample(text, "pkb_job_wall_seconds_bucket", profile="cpu-gloo", le="300.0") == 2
    assert sample(text, "pkb_job_wall_seconds_count", profile="cpu-gloo") == 2
    assert sample(text, "pkb_job_wall_seconds_sum", profile="cpu-gloo") == 207.0
    assert sample(text, "pkb_job_gpu_held_seconds_count", profile="cpu-gloo") == 2
    assert sample(text, "pkb_lease_reclaims_total", kind="job", profile="cpu-gloo") == 1
    assert sample(text, "pkb_build_stage", status="nothing_built", profile="cpu-gloo") == 1
    assert sample(text, "pkb_worker_last_heartbeat_timestamp_seconds", host="gpu-host-a", gpus="0-3") > 0
    assert 4 <= sample(text, "pkb_worker_heartbeat_age_seconds", worker="h:1:a") < 60
    assert sample(text, "pkb_worker_refusals", host="gpu-host-a") == 1


def test_a_lost_lease_is_an_expiry_and_an_infra_error(scrape, submit, owner, cpu):
    from leaderboard.jobs import services as jobs_services

    job = submit(owner).jobs.get()
    jobs_services.job_claim(job.pk, "dead-worker")
    jobs_services.jobs_reap(now=timezone.now() + timedelta(hours=1), broker_depth=lambda queue: 1)
    text = scrape(HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode()
    assert sample(text, "pkb_infra_errors_total", profile="cpu-gloo") == 1
    assert sample(text, "pkb_lease_expiries_total", profile="cpu-gloo") == 1


def test_readyz_names_what_is_not_ready(client, monkeypatch):
    from leaderboard.ops import views

    ok = client.get("/readyz")
    assert ok.status_code == 200 and ok.json() == {
        "ready": True,
        "checks": {"database": "ok", "migrations": "ok", "broker": "ok"},
    }

    def unreachable():
        raise ConnectionError("broker down")

    monkeypatch.setattr(views, "_broker", unreachable)
    down = client.get("/readyz")
    assert down.status_code == 503 and down.json()["checks"]["broker"] == "failed: ConnectionError"
    assert client.get("/healthz").status_code == 200  # alive all the same


def test_readyz_sees_a_missing_migration(client, monkeypatch):
    from django.db.migrations.executor import MigrationExecutor

    def one_unapplied(self, targets, clean_start=False):
        return [(self.loader.graph.nodes[("ops", "0001_initial")], False)]

    monkeypatch.setattr(MigrationExecutor, "migration_plan", one_unapplied)
    response = client.get("/readyz")
    assert response.status_code == 503 and response.json()["checks"]["migrations"] == "failed: RuntimeError"


def test_the_workers_page_is_the_staffs(client, owner, staff, submit):
    from leaderboard.jobs import services as jobs_services

    now = timezone.now()
    job = submit(owner).jobs.get()
    jobs_services.job_claim(job.pk, "host-a:10:x")
    WorkerRecord.objects.create(
        worker="host-a:10:x",
        hostname="host-a",
        pid=10,
        gpus="0-7",
        queues=["cpu-gloo"],
        profiles=["cpu-gloo"],
        booted_at=now,
        last_heartbeat_at=now,
        gates=[{"gate": "sandbox", "ok": True, "detail": "sandboxed: box"}],
        host={"torch": "2.11", "gpus": [{"name": "NVIDIA H200"}]},
    )
    WorkerRecord.objects.create(
        worker="host-b:11:y",
        hostname="host-b",
        pid=11,
        queues=["gpu-h200x8"],
        state="refused",
        refusal="refusing to start: no bubblewrap",
        booted_at=now,
    )
    WorkerRecord.objects.create(
        worker="host-c:12:z",
        hostname="host-c",
        pid=12,
        queues=["cpu-gloo"],
        booted_at=now - timedelta(hours=1),
        last_heartbeat_at=now - timedelta(hours=1),
    )
    assert client.get("/ops/workers/").status_code == 404
    client.force_login(owner)
    assert client.get("/ops/workers/").status_code == 404
    client.force_login(staff)
    page = client.get("/ops/workers/").content.decode()
    live, refused, silent = (page.index(f'data-worker="{w}"') for w in ("host-a:10:x", "host-b:11:y", "host-c:12:z"))
    assert live < refused < silent  # live first, then refusals
    assert f"job {job.pk}" in page and "NVIDIA H200" in page and "0-7" in page and "sandboxed: box" in page
    assert "refusing to start: no bubblewrap" in page and 'class="worker-silent"' in page


@pytest.mark.django_db(transaction=True)  # the heartbeat writes from its own thread
def test_a_worker_records_its_boot_its_heartbeat_and_a_refusal(monkeypatch, settings):
    """The middleware's hooks as a worker runs them (the gates already passed), then a refusal."""
    from types import SimpleNamespace

    from leaderboard.jobs.judge_process import WORKER_ID
    from leaderboard.ops import heartbeat

    settings.PKB_WORKER_HEARTBEAT_SECONDS = 1
    ops = heartbeat.WorkerOps()
    broker = SimpleNamespace(get_declared_queues=lambda: set())
    worker = SimpleNamespace(consumer_whitelist={"gpu-h200x8", "feedback-gpu-h200x8"})
    ops.after_worker_boot(broker, worker)
    try:
        record = WorkerRecord.objects.get(worker=WORKER_ID)
        assert record.state == "running" and record.profiles == ["gpu-h200x8"]
        assert [g["gate"] for g in record.gates] == ["sandbox", "gpus", "host"]
        first = record.last_heartbeat_at
        WorkerRecord.objects.filter(pk=record.pk).update(last_heartbeat_at=first - timedelta(minutes=5))
        import time

        deadline = time.monotonic() + 10
        while WorkerRecord.objects.get(pk=record.pk).last_heartbeat_at < first and time.monotonic() < deadline:
            time.sleep(0.2)
        assert WorkerRecord.objects.get(pk=record.pk).last_heartbeat_at >= first  # the heartbeat renewed it
    finally:
        ops.before_worker_shutdown(broker, worker)
    assert WorkerRecord.objects.get(worker=WORKER_ID).state == "stopped"
    heartbeat.refused({"gpu-h200x8"}, "GPU 2 is held by another worker (pid 4121)")
    record = WorkerRecord.objects.get(worker=WORKER_ID)
    assert record.state == "refused" and "GPU 2 is held" in record.refusal


@pytest.mark.django_db(transaction=True)  # the record is written on the worker's own connection
def test_a_worker_refused_at_boot_leaves_its_reason_on_the_record(monkeypatch, settings, cpu):
    """Through leaderboard/jobs/worker_boot.py's boot gates: the sandbox says no, the worker does not start, its record
    says why."""
    from types import SimpleNamespace

    from leaderboard.jobs import judge_commands, sandbox_gate
    from leaderboard.jobs import worker_boot as bootstrap
    from leaderboard.jobs.judge_process import WORKER_ID

    monkeypatch.setattr(
        judge_commands,
        "host_support",
        lambda: {"complete": False, "summary": "simulated", "missing": ["simulated: no bwrap"]},
    )
    monkeypatch.setattr(sandbox_gate, "_decided", {})
    settings.PKB_SANDBOX_OFF = False
    with pytest.raises(bootstrap.WorkerRefused):
        bootstrap.middleware().before_worker_boot(None, SimpleNamespace(consumer_whitelist={"cpu-gloo"}))
    record = WorkerRecord.objects.get(worker=WORKER_ID)
    assert record.state == "refused" and "simulated: no bwrap" in record.refusal and record.queues == ["cpu-gloo"]
