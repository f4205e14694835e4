"""A judge result of verdict ``unverified`` (a hidden check that could not be judged even when run again:
docs/threat-model.md, hidden checks fail closed) is accepted from the judge and stored as the run's final result:
not correct, not faster, not retried, and the quota not refunded as it is for a platform failure."""

import json
import sys

from evaluator.contract.schema import JudgeRequest
from leaderboard.accounts.models import QuotaCharge
from leaderboard.jobs import runner
from leaderboard.jobs.models import Result
from tests.site.conftest import judge_document


def test_an_unverified_result_is_final_never_correct_and_never_refunded(
    owner, submit, cpu, monkeypatch, django_capture_on_commit_callbacks
):
    document = judge_document(verdict="unverified")
    # Only the judge's command is replaced: the runner reads, checks and stores its document as for a real one.
    code = f"import sys; open(sys.argv[1], 'w').write({json.dumps(document)!r})"
    monkeypatch.setattr(JudgeRequest, "command", lambda request: [sys.executable, "-c", code, request.json_out])
    job = submit(owner).jobs.get()
    with django_capture_on_commit_callbacks(execute=True):
        assert runner.run_job(job.pk, "w") == "done"
    job.refresh_from_db()
    result = Result.objects.get(job=job)  # one attempt: not retried
    assert result.verdict == "unverified" and result.get_verdict_display() == "unverified" and result.is_final
    assert job.status == "done" and QuotaCharge.objects.get(job=job).refunded_at is None
    score = job.submission.scores.get(problem_id=1)
    assert score.status == "unverified" and not score.correct
    entry = job.submission.entry
    assert entry.correct == 0 and entry.faster == 0 and entry.pending == 0
