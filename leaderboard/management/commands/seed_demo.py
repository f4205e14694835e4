"""Seed a visible demo: a few real submissions evaluated by the real judge on the CPU gloo profile.

Files come from leaderboard/demo/ (PKB layout). The jobs are run here, synchronously, through the same
runner the workers use (claim -> judge subprocess -> result), so the pages show real verdicts and timings.
"""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from leaderboard.accounts import services as accounts_services
from leaderboard.catalogue import services as catalogue_services
from leaderboard.jobs import runner
from leaderboard.jobs.models import EvaluationJob
from leaderboard.submissions import services as submissions_services
from leaderboard.submissions.models import Submission

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"
DEMOS = [
    (
        "reference",
        dict(
            model="reference (A/A run)",
            agent="pkb-arena",
            agent_version="demo",
            protocol="one_shot",
            attempts=1,
            label="The reference against itself: must not be faster",
        ),
    ),
    (
        "agent",
        dict(
            model="demo-model",
            agent="demo-harness",
            agent_version="0.1",
            protocol="best_of_k",
            attempts=2,
            tokens=48000,
            dollars="0.35",
            label="Best of 2: a wrong try, then a right one",
        ),
    ),
    (
        "broken",
        dict(
            model="demo-broken",
            agent="demo-harness",
            agent_version="0.1",
            protocol="one_shot",
            attempts=1,
            label="A crash: runtime_error, never counted as correct",
        ),
    ),
]


def read_dir(folder: Path) -> list[tuple[str, bytes]]:
    return [(str(p.relative_to(folder)), p.read_bytes()) for p in sorted(folder.rglob("*.py"))]


class Command(BaseCommand):
    help = "Create and evaluate the demo submissions (skipped when they exist; --force adds them again)."

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true")
        parser.add_argument("--profile", default="cpu-gloo")
        parser.add_argument("--no-eval", action="store_true", help="only queue the jobs (a worker runs them)")

    def handle(self, *args, **options):
        catalogue_services.profiles_ensure_defaults()
        user, _ = get_user_model().objects.get_or_create(username="demo", defaults={"is_active": True})
        if not user.has_usable_password():
            user.set_unusable_password()
            user.save()
        submitter = accounts_services.submitter_for(user)
        if Submission.objects.filter(submitter=submitter).exists() and not options["force"]:
            self.stdout.write("demo already seeded (use --force to add it again)")
            return
        created = []
        for folder, fields in DEMOS:
            try:
                submission = submissions_services.submission_create(
                    submitter,
                    {**fields, "profile": options["profile"]},
                    read_dir(DEMO_DIR / folder),
                    allow_duplicate=options["force"],
                )
            except Exception as exc:
                raise CommandError(f"demo {folder}: {exc}") from exc
            submissions_services.submission_publish(submission, user)
            created.append(submission)
            self.stdout.write(f"submission #{submission.pk} ({folder}): {submission.jobs.count()} job(s)")
        if options["no_eval"]:
            return
        jobs = EvaluationJob.objects.filter(submission__in=created).order_by("id")
        for job in jobs:
            self.stdout.write(f"  judging job {job.pk} ({job.candidate.filename}) ...", ending="")
            self.stdout.flush()
            outcome = runner.run_job(job.pk, worker="seed_demo")
            job.refresh_from_db()
            verdict = job.results.order_by("-id").values_list("verdict", flat=True).first()
            self.stdout.write(f" {outcome}: {verdict}")
