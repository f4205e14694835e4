"""Re-queue jobs whose worker lost its lease, and re-send messages a broker lost. Run from cron or with --loop."""

import time

from django.core.management.base import BaseCommand
from django.db import close_old_connections

from leaderboard.jobs import services as jobs_services


class Command(BaseCommand):
    help = "Re-queue expired job leases and re-send lost broker messages (once, or every N seconds with --loop N)."

    def add_arguments(self, parser):
        parser.add_argument("--loop", type=int, default=0, metavar="SECONDS")

    def handle(self, *args, **options):
        while True:
            counts = jobs_services.jobs_reap()
            self.stdout.write(f"requeued {counts['requeued']}, failed {counts['failed']}, resent {counts['resent']}")
            if not options["loop"]:
                return
            time.sleep(options["loop"])
            close_old_connections()
