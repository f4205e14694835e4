from django.apps import AppConfig


class FeedbackConfig(AppConfig):
    """Feedback sessions and runs (the agentic protocol, metered by the platform) and profile runs."""

    name = "leaderboard.feedback"
    label = "feedback"
    verbose_name = "pkb-arena feedback"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Registers the feedback actor on the configured broker (django_dramatiq set it up before this app), so an
        # in-process worker (``runserver_with_worker --queues cpu-gloo,feedback-cpu-gloo``) can run feedback runs.
        # ... and its feedback runs: the jobs app releases every registered lease of a dead worker.
        from leaderboard.feedback import (
            actors,  # noqa: F401
            services,
        )
        from leaderboard.jobs import lease

        lease.register(services.LEASE, services.runs_reap)
