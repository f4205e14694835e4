"""The platform as the database sees it, in Prometheus' text format (prometheus_client), for /metrics.

Every family is read from the rows at scrape time (a custom collector), so any web process answers for the whole
site and nothing is lost when one restarts: jobs and feedback runs by status and profile, queue depth per queue
(queued rows, which is what the broker's queues should hold), judged wall and GPU-held seconds as histograms,
verdicts, infra errors, build-stage outcomes, the workers' heartbeats by host and device set, lease expiries and
re-claims. Each worker serves what only its process knows on a port of its own (leaderboard/ops/worker_metrics.py).
"""

from __future__ import annotations

from django.db.models import Count, F, Q, Sum
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

# Seconds of one judged run, wall or GPU-held (wall x W): a CPU job is seconds, a GPU submission's file minutes.
BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 10800)
LEASE_EXPIRED = "its lease expired"  # the reaper's message for a job whose worker is gone (leaderboard/jobs/lease.py)


def _queue_depths() -> dict[str, int]:
    """Queued rows per queue: a job waiting for its build on ``build-<profile>``, any other queued job on its
    profile's, a feedback run on ``feedback-<profile>``."""
    from leaderboard.catalogue.models import HardwareProfile
    from leaderboard.feedback.models import FeedbackRun, queue_for
    from leaderboard.jobs.build_routing import build_queue
    from leaderboard.jobs.models import EvaluationJob

    depths = {}
    for profile in HardwareProfile.objects.all():
        queued = EvaluationJob.objects.filter(profile=profile, status=EvaluationJob.QUEUED)
        building = queued.filter(build_status=EvaluationJob.BUILD_QUEUED).count()
        depths[profile.queue_name] = queued.count() - building
        depths[build_queue(profile)] = building
        depths[queue_for(profile.slug)] = FeedbackRun.objects.filter(profile=profile, status=FeedbackRun.QUEUED).count()
    return depths


def _histogram(name: str, documentation: str, field: str, rows) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, documentation, labels=["profile"])
    buckets = {f"le{i}": Count("id", filter=Q(**{f"{field}__lte": bound})) for i, bound in enumerate(BUCKETS)}
    for row in rows.values("job__profile__slug").annotate(total=Count("id"), sum=Sum(field), **buckets):
        counts = [(str(float(bound)), row[f"le{i}"]) for i, bound in enumerate(BUCKETS)]
        family.add_metric([row["job__profile__slug"]], counts + [("+Inf", row["total"])], row["sum"] or 0.0)
    return family


class DatabaseCollector:
    """prometheus_client's custom-collector protocol: ``collect()`` yields the families, read now."""

    def collect(self):
        from django.utils import timezone

        from leaderboard.feedback.models import FeedbackRun
        from leaderboard.jobs.models import EvaluationJob, Result
        from leaderboard.ops.models import WorkerRecord

        jobs = GaugeMetricFamily("pkb_jobs", "Evaluation jobs by status and profile", labels=["status", "profile"])
        for row in EvaluationJob.objects.values("status", "profile__slug").annotate(n=Count("id")):
            jobs.add_metric([row["status"], row["profile__slug"]], row["n"])
        yield jobs
        runs = GaugeMetricFamily(
            "pkb_feedback_runs", "Feedback and profile runs by status and profile", labels=["status", "profile"]
        )
        for row in FeedbackRun.objects.values("status", "profile__slug").annotate(n=Count("id")):
            runs.add_metric([row["status"], row["profile__slug"]], row["n"])
        yield runs
        depth = GaugeMetricFamily(
            "pkb_queue_depth", "Queued rows per broker queue, as the database sees them", labels=["queue"]
        )
        for queue, n in sorted(_queue_depths().items()):
            depth.add_metric([queue], n)
        yield depth

        judged = Result.objects.exclude(verdict="infra_error").filter(wall_s__isnull=False)
        yield _histogram("pkb_job_wall_seconds", "Judge wall seconds of each judged run", "wall_s", judged)
        yield _histogram(
            "pkb_job_gpu_held_seconds", "Device-seconds each judged run held (wall x W)", "gpu_seconds", judged
        )

        verdicts = CounterMetricFamily(
            "pkb_results", "Results stored, by verdict and profile", labels=["verdict", "profile"]
        )
        infra = CounterMetricFamily(
            "pkb_infra_errors", "Attempts the platform failed (never scored), by profile", labels=["profile"]
        )
        expired = CounterMetricFamily(
            "pkb_lease_expiries",
            "Jobs whose worker was lost: lease expired or released by the next worker at boot, by profile",
            labels=["profile"],
        )
        for row in Result.objects.values("verdict", "job__profile__slug").annotate(
            n=Count("id"), lost=Count("id", filter=Q(message__contains=LEASE_EXPIRED))
        ):
            verdicts.add_metric([row["verdict"], row["job__profile__slug"]], row["n"])
            if row["verdict"] == "infra_error":
                infra.add_metric([row["job__profile__slug"]], row["n"])
                expired.add_metric([row["job__profile__slug"]], row["lost"])
        yield verdicts
        yield infra
        yield expired
        reclaims = CounterMetricFamily(
            "pkb_lease_reclaims",
            "Claims after the first within a run (a job or feedback "
            "run taken again after a lost or failed attempt), by kind and profile",
            labels=["kind", "profile"],
        )
        for kind, model in (("job", EvaluationJob), ("feedback", FeedbackRun)):
            for row in model.objects.filter(attempts__gt=1).values("profile__slug").annotate(n=Sum(F("attempts") - 1)):
                reclaims.add_metric([kind, row["profile__slug"]], row["n"])
        yield reclaims

        builds = GaugeMetricFamily(
            "pkb_build_stage", "Jobs by build-stage outcome and profile", labels=["status", "profile"]
        )
        for row in (
            EvaluationJob.objects.exclude(build_status="")
            .values("build_status", "profile__slug")
            .annotate(n=Count("id"))
        ):
            builds.add_metric([row["build_status"], row["profile__slug"]], row["n"])
        yield builds

        now = timezone.now()
        beat = GaugeMetricFamily(
            "pkb_worker_last_heartbeat_timestamp_seconds",
            "Each worker's last heartbeat (Unix time), by worker, host and device set",
            labels=["worker", "host", "gpus", "state"],
        )
        age = GaugeMetricFamily(
            "pkb_worker_heartbeat_age_seconds",
            "Seconds since each running worker's last heartbeat",
            labels=["worker", "host", "gpus"],
        )
        refusals = GaugeMetricFamily(
            "pkb_worker_refusals",
            "Workers that refused to start (their reasons: the Workers page), by host",
            labels=["host"],
        )
        refused: dict[str, int] = {}
        for record in WorkerRecord.objects.all():
            if record.state == WorkerRecord.REFUSED:
                refused[record.hostname] = refused.get(record.hostname, 0) + 1
            if record.last_heartbeat_at is None:
                continue
            beat.add_metric(
                [record.worker, record.hostname, record.gpus, record.state], record.last_heartbeat_at.timestamp()
            )
            if record.state == WorkerRecord.RUNNING:
                age.add_metric(
                    [record.worker, record.hostname, record.gpus], (now - record.last_heartbeat_at).total_seconds()
                )
        for host, n in sorted(refused.items()):
            refusals.add_metric([host], n)
        yield beat
        yield age
        yield refusals


def exposition() -> bytes:
    """The text a scrape gets."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DatabaseCollector())
    return generate_latest(registry)
