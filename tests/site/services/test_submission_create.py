"""services.submission_create: a valid upload becomes a submission, candidates, jobs, charges and messages; a bad
one leaves nothing behind."""

import dramatiq
import pytest

from leaderboard.accounts.models import QuotaCharge
from leaderboard.catalogue import services as catalogue_services
from leaderboard.jobs.models import EvaluationJob
from leaderboard.scoring.models import LeaderboardEntry, ProblemScore
from leaderboard.submissions import services as submissions_services
from leaderboard.submissions import uploads
from leaderboard.submissions.models import Candidate, Submission
from tests.site.conftest import GOOD_1, GOOD_13, meta


def stored() -> tuple:
    return (
        Submission.objects.count(),
        Candidate.objects.count(),
        EvaluationJob.objects.count(),
        QuotaCharge.objects.count(),
        ProblemScore.objects.count(),
        LeaderboardEntry.objects.count(),
    )


def test_upload_creates_everything(owner, submit, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        submission = submit(owner, {"1_allreduce_torch.py": GOOD_1, "13_gemm_allreduce_torch.py": GOOD_13})
    assert submission.backend == "torch" and submission.protocol == "one_shot"
    assert submission.candidates.count() == 2
    jobs = list(submission.jobs.all())
    assert [j.status for j in jobs] == ["queued", "queued"]
    assert QuotaCharge.objects.filter(submitter=owner.submitter).count() == 2
    assert ProblemScore.objects.filter(submission=submission).count() == 87
    assert submission.entry.pending == 2 and submission.visibility == "private"
    # One message per job, on the profile's queue, carrying only the job id.
    queue = dramatiq.get_broker().queues["cpu-gloo"]
    messages = [queue.get_nowait() for _ in range(queue.qsize())]
    bodies = [dramatiq.Message.decode(m) if isinstance(m, bytes) else m for m in messages]
    assert sorted(b.args for b in bodies)[-2:] == sorted((j.pk,) for j in jobs)


def test_no_message_leaves_before_commit(owner, submit, django_capture_on_commit_callbacks):
    broker = dramatiq.get_broker()
    broker.declare_queue("cpu-gloo")
    before = broker.queues["cpu-gloo"].qsize()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        submit(owner)
    assert broker.queues["cpu-gloo"].qsize() == before and len(callbacks) == 1


def test_candidates_of_unimplemented_problems_wait_without_a_job(owner, submit):
    # Problem 2 is in the catalogue; the test registry implements only 1 and 13.
    submission = submit(owner, {"1_allreduce_torch.py": GOOD_1, "2_allgather_torch.py": GOOD_1})
    assert submission.candidates.count() == 2 and submission.jobs.count() == 1
    assert ProblemScore.objects.get(submission=submission, problem_id=2).status == "not_judged"
    assert QuotaCharge.objects.count() == 1  # only judged files are charged


def test_jobs_are_created_when_the_problem_lands(owner, submit, small_registry):
    import problems

    submission = submit(owner, {"2_allgather_torch.py": GOOD_1})
    assert submission.jobs.count() == 0
    catalogue_services.problems_load(problems.catalogue(), {**small_registry, 2: problems.get(2)})
    assert submissions_services.jobs_create_missing() == 1
    assert ProblemScore.objects.get(submission=submission, problem_id=2).status == "pending"


@pytest.mark.parametrize(
    "files, fields, rule",
    [
        ({"1_allreduse_torch.py": GOOD_1}, {}, "unknown_problem"),
        ({"1_allreduce_torch.py": GOOD_1, "1_allreduce_cuda.py": GOOD_1}, {"backend": "mixed"}, "duplicate"),
        ({"1_allreduce_torch.py": b"\xff\xfe"}, {}, "not_utf8"),
        ({"1_allreduce_torch.py": GOOD_1}, {"model": None}, "missing_metadata"),
        (
            {"attempt_1/1_allreduce_torch.py": GOOD_1, "attempt_2/1_allreduce_torch.py": GOOD_1},
            {"protocol": "best_of_k", "attempts": 1},
            "over_budget",
        ),
        ({"../1_allreduce_torch.py": GOOD_1}, {}, "path_escapes_folder"),
    ],
)
def test_refused_uploads_store_nothing(owner, cpu, files, fields, rule):
    before = stored()
    with pytest.raises(uploads.UploadRejected) as caught:
        submissions_services.submission_create(owner.submitter, meta(**fields), list(files.items()))
    assert rule in {e.rule for e in caught.value.errors}
    assert stored() == before


def test_closed_profile_is_refused(owner, cpu):
    from leaderboard.catalogue.models import HardwareProfile

    assert not HardwareProfile.objects.get(slug="gpu-h200x8").accepting
    with pytest.raises(uploads.UploadRejected) as caught:
        submissions_services.submission_create(
            owner.submitter, meta(profile="gpu-h200x8"), [("1_allreduce_torch.py", GOOD_1)]
        )
    assert caught.value.errors[0].rule == "unknown_profile"


def test_archive_upload(owner, cpu):
    from tests.site.conftest import zip_bytes

    data = zip_bytes(
        {
            "run/attempt_1/1_allreduce_torch.py": GOOD_1,
            "run/attempt_2/1_allreduce_torch.py": GOOD_1,
            "run/submission.json": b'{"model": "zipped", "protocol": "best_of_k", "attempts": 2}',
        }
    )
    submission = submissions_services.submission_create(owner.submitter, {"profile": "cpu-gloo"}, [("run.zip", data)])
    assert submission.model_name == "zipped" and submission.attempts_k == 2
    assert sorted(submission.candidates.values_list("attempt", flat=True)) == [1, 2]


def test_archive_and_loose_files_together_are_refused(owner, cpu):
    from tests.site.conftest import zip_bytes

    with pytest.raises(uploads.UploadRejected):
        submissions_services.submission_create(
            owner.submitter, meta(), [("a.zip", zip_bytes({"x": b""})), ("1_allreduce_torch.py", GOOD_1)]
        )


def test_feedback_for_must_be_ones_own(owner, outsider, submit):
    target = submit(owner)
    linked = submit(owner, feedback_for=target.pk)
    assert linked.feedback_for_id == target.pk
    with pytest.raises(uploads.UploadRejected):
        submit(outsider, feedback_for=target.pk)
