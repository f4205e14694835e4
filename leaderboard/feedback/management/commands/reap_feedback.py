"""Re-queue feedback runs whose worker lost its lease, and re-send lost messages. Once, or every N seconds."""

import time

from django.core.management.base import BaseCommand
from django.db import close_old_connections

from leaderboard.feedback import services


class Command(BaseCommand):
    help = "Re-queue expired feedback-run leases and re-send lost broker messages (once, or with --loop N)."

    def add_arguments(self, parser):
        parser.add_argument("--loop", type=int, default=0, metavar="SECONDS")
        parser.add_argument("--resend-all", action="store_true", help="re-send every queued run (empty broker)")

    def handle(self, *args, **options):
        while True:
            counts = services.runs_reap(resend_all=options["resend_all"])
            self.stdout.write(f"requeued {counts['requeued']}, failed {counts['failed']}, resent {counts['resent']}")
            if not options["loop"]:
                return
            time.sleep(options["loop"])
            close_old_connections()
