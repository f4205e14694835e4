from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "leaderboard.jobs"
    label = "jobs"
    verbose_name = "pkb-arena jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # A worker that finds a dead one's leases (leaderboard/jobs/lease.py, release_leases_of) re-queues its jobs.
        from leaderboard.jobs import lease, services

        lease.register(services.LEASE, services.jobs_reap)
