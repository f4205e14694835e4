"""One worker bootstrap (leaderboard/jobs/worker_boot.py) for every dramatiq entry point: Django set up once, one
middleware on the broker that decides the candidate sandbox once at boot and runs every entry point's reaper."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import dramatiq
from dramatiq.brokers.stub import StubBroker

from leaderboard.jobs import host_gate, sandbox_gate
from leaderboard.jobs import worker_boot as bootstrap

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINTS = (
    "leaderboard/jobs/actors.py",
    "leaderboard/feedback/actors.py",
    "leaderboard/feedback/worker.py",
    "leaderboard/management/commands/runserver_with_worker.py",
)


def _imports_and_calls(rel: str) -> tuple[set[str], set[str]]:
    tree = ast.parse((ROOT / rel).read_text())
    imported, called = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            imported |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            called.add(node.func.attr)
    return imported, called


def test_every_entry_point_uses_the_one_bootstrap():
    for rel in ENTRY_POINTS:
        imported, called = _imports_and_calls(rel)
        assert "leaderboard.jobs.worker_boot" in imported, f"{rel} does not use leaderboard/jobs/worker_boot.py"
        # Nothing of the bootstrap's done again on its own: Django's setup, middleware, a hand-made Worker.
        assert not {"setup", "add_middleware", "Worker"} & called, f"{rel}: {called & {'setup', 'add_middleware'}}"
        assert "django.setup" not in imported and "dramatiq.middleware.Middleware" not in imported, rel


def test_the_entry_points_share_one_middleware():
    import leaderboard.feedback.worker
    import leaderboard.jobs.actors  # noqa: F401

    found = [m for m in dramatiq.get_broker().middleware if isinstance(m, bootstrap.WorkerMiddleware)]
    assert len(found) == 1 and {"jobs", "feedback"} <= set(found[0].parts)


class FakeReaper:
    def __init__(self, log, name):
        self.log, self.name = log, name

    def start(self):
        self.log.append(("start", self.name))

    def stop(self):
        self.log.append(("stop", self.name))


def test_a_worker_boot_checks_the_sandbox_once_and_runs_every_reaper(monkeypatch):
    checks, log, booted = [], [], threading.Event()
    monkeypatch.setattr(sandbox_gate, "check_sandbox", lambda queues: checks.append(sorted(queues)) or {})
    monkeypatch.setattr(host_gate, "check_host", lambda queues, threads: checks.append(("host", threads)) or {})
    broker = StubBroker()
    broker.emit_after("process_boot")
    bootstrap.boot(
        "jobs",
        reaper=lambda: FakeReaper(log, "jobs"),
        on_boot=booted.set,
        declare=lambda b: b.declare_queue("cpu-gloo"),
        broker=broker,
    )
    bootstrap.boot("feedback", reaper=lambda: FakeReaper(log, "feedback"), broker=broker)
    bootstrap.boot("feedback", reaper=lambda: FakeReaper(log, "feedback"), broker=broker)  # twice: still one part
    assert sum(isinstance(m, bootstrap.WorkerMiddleware) for m in broker.middleware) == 1
    worker = dramatiq.Worker(broker, queues={"cpu-gloo"}, worker_threads=1, worker_timeout=100)
    worker.start()
    worker.stop()
    assert checks == [["cpu-gloo"], ("host", 1)]  # the gates, once, before any message
    assert booted.is_set()
    assert log == [("start", "jobs"), ("start", "feedback"), ("stop", "jobs"), ("stop", "feedback")]


def test_the_embedded_worker_boots_through_the_bootstrap(monkeypatch):
    from leaderboard.management.commands import runserver_with_worker

    started = []
    monkeypatch.setattr(bootstrap, "start_worker", lambda queues: started.append(queues) or "worker")
    monkeypatch.setattr("leaderboard.jobs.services.jobs_reap", lambda resend_all=False: None)
    monkeypatch.setattr("leaderboard.feedback.services.runs_reap", lambda resend_all=False: None)
    assert runserver_with_worker.start_worker(["cpu-gloo"]) == "worker" and started == [["cpu-gloo"]]
