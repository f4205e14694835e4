from django.apps import AppConfig


def _record_refusal(sender, queues, reason, **kwargs):
    from leaderboard.ops.heartbeat import refused

    refused(queues, reason)


class OpsConfig(AppConfig):
    name = "leaderboard.ops"
    label = "ops"
    verbose_name = "pkb-arena operations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # A boot gate's refusal lands on the worker's record; the jobs app announces it and never imports ops.
        from leaderboard.jobs.signals import worker_refused

        worker_refused.connect(_record_refusal, dispatch_uid="leaderboard.ops.refused")
