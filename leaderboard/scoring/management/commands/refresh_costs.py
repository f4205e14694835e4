"""Recompute every submission's stored measured costs by leaderboard/scoring/costs.py's definition (after an upgrade
that changed it: feedback runs now include linked sessions' runs). Idempotent."""

from django.core.management.base import BaseCommand

from leaderboard.scoring import costs
from leaderboard.submissions.models import Submission


class Command(BaseCommand):
    help = "Recompute stored rank-seconds and feedback-run counts of every submission (leaderboard/scoring/costs.py)."

    def handle(self, *args, **options):
        changed = 0
        for pk, before in Submission.objects.values_list("pk", "feedback_runs").order_by("pk").iterator():
            costs.refresh(pk)
            changed += Submission.objects.filter(pk=pk).exclude(feedback_runs=before).exists()
        self.stdout.write(f"refreshed {Submission.objects.count()} submission(s); {changed} feedback count(s) changed")
