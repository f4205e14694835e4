"""Management commands: load_problems, seed_demo (queueing only: its judging is the runner's, tested there),
reap_jobs."""

from datetime import timedelta
from io import StringIO

from django.core.management import call_command
from django.utils import timezone

from leaderboard.catalogue.models import HardwareProfile, Problem
from leaderboard.jobs.models import EvaluationJob
from leaderboard.submissions.models import Submission


def test_load_problems_loads_87_and_the_registry(db):
    out = StringIO()
    call_command("load_problems", stdout=out)
    assert Problem.objects.count() == 87
    implemented = Problem.objects.filter(implemented=True)
    assert implemented.filter(pk=1).exists() and implemented.count() >= 2
    p1 = Problem.objects.get(pk=1)
    assert "all_reduce" in p1.reference_source and p1.docstring and p1.light
    assert set(HardwareProfile.objects.values_list("slug", flat=True)) >= {"cpu-gloo", "gpu-h200x8"}
    call_command("load_problems", stdout=out)  # idempotent
    assert Problem.objects.count() == 87 and "87 updated" in out.getvalue()


def test_seed_demo_creates_published_submissions_once(catalogue):
    call_command("seed_demo", "--no-eval", stdout=StringIO())
    demo = Submission.objects.filter(submitter__user__username="demo")
    assert demo.count() == 3 and set(demo.values_list("visibility", flat=True)) == {"public"}
    assert EvaluationJob.objects.filter(submission__in=demo, status="queued").count() == 5
    out = StringIO()
    call_command("seed_demo", "--no-eval", stdout=out)
    assert "already seeded" in out.getvalue() and demo.count() == 3


def test_reap_jobs_command(owner, submit):
    job = submit(owner).jobs.get()
    EvaluationJob.objects.filter(pk=job.pk).update(
        status="running", lease_owner="gone", attempts=1, lease_expires_at=timezone.now() - timedelta(minutes=1)
    )
    out = StringIO()
    call_command("reap_jobs", stdout=out)
    assert "requeued 1" in out.getvalue()
    job.refresh_from_db()
    assert job.status == "queued"
