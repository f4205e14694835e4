"""``runserver`` plus an in-process dramatiq worker (one thread) and the reaper: the embedded mode of `make serve`.
A command of the project, not of an app: it starts the jobs' and the feedback runs' workers together, above both.

The worker is dramatiq's own Worker, started by the one worker bootstrap (leaderboard/jobs/worker_boot.py: the sandbox
gate and the reaper, as the dramatiq CLI's), consuming the configured broker (the in-memory StubBroker by default), so
jobs take the same path as on a GPU host: message with the job id -> actor -> runner.run_job -> judge subprocess.
"""

import dramatiq
from django.conf import settings
from django.core.management.base import CommandError
from django.core.management.commands.runserver import Command as RunserverCommand

from leaderboard.jobs import services as jobs_services


class Command(RunserverCommand):
    help = "Serve the site with an in-process evaluation worker (embedded mode)."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument(
            "--queues",
            default=f"{settings.PKB_DEFAULT_PROFILE},feedback-{settings.PKB_DEFAULT_PROFILE}",
            help="comma-separated hardware profile queues this process evaluates",
        )
        parser.add_argument(
            "--gpus",
            default=None,
            help="the GPUs this worker's judges use, e.g. 0-3 or 0,2 (PKB_GPUS; locked while it runs)",
        )

    def handle(self, *args, **options):
        options["use_reloader"] = False  # one process: the worker must not be started twice
        if options.get("gpus") is not None:
            from leaderboard.jobs import gpus

            try:
                gpus.parse(options["gpus"])  # a bad set stops here, before anything starts
            except gpus.BadGpuSet as exc:
                raise CommandError(str(exc)) from None
            settings.PKB_GPUS = options["gpus"]  # read by the worker's boot and by every judge it starts
        if settings.PKB_SERVE_STATIC:
            # WhiteNoise serves STATIC_ROOT: hashed, compressed copies made here (unchanged files are kept).
            from django.core.management import call_command

            call_command("collectstatic", interactive=False, verbosity=0)
        queues = [q.strip() for q in options["queues"].split(",") if q.strip()]
        worker = start_worker(queues)
        builder = start_build_worker(queues)
        try:
            super().handle(*args, **options)
        finally:
            if builder is not None:
                builder.stop(timeout=5000)
            worker.stop(timeout=5000)


def start_worker(queues: list[str]) -> dramatiq.Worker:
    import leaderboard.feedback.actors
    import leaderboard.jobs.actors  # noqa: F401  (declares the actor, the queues and its part of the worker)
    from leaderboard.feedback import services as feedback_services
    from leaderboard.jobs import worker_boot as bootstrap

    worker = bootstrap.start_worker(queues)  # the sandbox gate and the reaper, as a dramatiq CLI worker
    # The in-memory broker starts empty: re-send every job the database says is waiting.
    jobs_services.jobs_reap(resend_all=True)
    feedback_services.runs_reap(resend_all=True)
    return worker


def start_build_worker(queues: list[str]):
    """The build stage's threads (leaderboard/jobs/build_stage.py, BuildThreads) for the profiles among ``queues`` it
    applies to (PKB_BUILD_STAGE), or None. If they cannot start, the jobs go to their judged runs, which build as
    without a stage (the reaper re-sends a job that waited PKB_REQUEUE_QUEUED_AFTER_SECONDS for its build)."""
    from leaderboard.jobs import build_stage

    try:
        return build_stage.start_embedded(queues)
    except Exception:  # noqa: BLE001 - whatever stops it, the jobs still build in their judged runs
        build_stage.log.exception("the build stage's worker did not start; jobs build in their judged runs")
        return None
