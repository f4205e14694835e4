from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "leaderboard.jobs"
    label = "jobs"
    verbose_name = "pkb-arena jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # A worker that finds a dead one's leases (leaderboard/jobs/lease.py, release_leases_of) re-queues its jobs.
        from leaderboard.accounts import selectors as accounts_selectors
        from leaderboard.jobs import lease, selectors, services

        lease.register(services.LEASE, services.jobs_reap)
        # The concurrent quota (accounts, below jobs) counts a submitter's jobs queued or running.
        accounts_selectors.register_waiting(selectors.jobs_waiting_count)
