"""Materialised scores: selection rules over k attempts, flagged results never count, leaderboard aggregates."""

import math

import pytest

from leaderboard.jobs import services as jobs_services
from leaderboard.scoring.models import LeaderboardEntry
from leaderboard.submissions import services as submissions_services
from tests.site.conftest import GOOD_1, GOOD_13, judge_document

TWO = {"attempt_1/1_allreduce_torch.py": GOOD_1, "attempt_2/1_allreduce_torch.py": GOOD_1}


def jobs_by_attempt(submission):
    return {j.candidate.attempt: j for j in submission.jobs.select_related("candidate")}


@pytest.mark.parametrize("rule, chosen", [("first", 1), ("last", 2), ("best_measured", 2)])
def test_selection_rules(owner, submit, finish, rule, chosen):
    submission = submit(owner, TWO, protocol="best_of_k", attempts=2, selection=rule)
    jobs = jobs_by_attempt(submission)
    finish(jobs[1], judge_document(speedup=1.1, lo=0.9, hi=1.3, faster=False))
    finish(jobs[2], judge_document(speedup=2.5, lo=2.2, hi=2.8))
    score = submission.scores.get(problem_id=1)
    assert score.attempt == chosen and score.attempts_correct == 2


def test_best_measured_waits_for_every_attempt(owner, submit, finish):
    submission = submit(owner, TWO, protocol="best_of_k", attempts=2)
    finish(jobs_by_attempt(submission)[1], judge_document())
    assert submission.scores.get(problem_id=1).status == "pending"


def test_best_measured_prefers_a_correct_attempt(owner, submit, finish):
    submission = submit(owner, TWO, protocol="best_of_k", attempts=2)
    jobs = jobs_by_attempt(submission)
    finish(jobs[1], judge_document())
    finish(jobs[2], judge_document(verdict="runtime_error"))
    score = submission.scores.get(problem_id=1)
    assert (score.attempt, score.status, score.correct) == (1, "correct", True)


def test_flagged_results_show_but_never_count(owner, submit, finish, gpu):
    submission = submit(owner, profile="gpu-h200x8")
    finish(submission.jobs.get(), judge_document(flags=["faster_than_light"]))
    score = submission.scores.get(problem_id=1)
    assert score.status == "correct" and score.flagged and not score.correct and not score.faster
    entry = LeaderboardEntry.objects.get(submission=submission)
    assert (entry.correct, entry.faster, entry.flagged_results) == (0, 0, 1)


def test_entry_aggregates(owner, submit, finish):
    submission = submit(owner, {"1_allreduce_torch.py": GOOD_1, "13_gemm_allreduce_torch.py": GOOD_13})
    first, second = submission.jobs.select_related("candidate").order_by("candidate__problem_id")
    finish(first, judge_document(speedup=1.6, lo=1.55, hi=1.7))
    finish(second, judge_document(speedup=4.0, lo=2.5, hi=5.0))
    entry = LeaderboardEntry.objects.get(submission=submission)
    assert (entry.correct, entry.faster, entry.judged, entry.pending) == (2, 2, 2, 0)
    assert entry.fast_1_0 == pytest.approx(2 / 87) and entry.fast_1_5 == pytest.approx(2 / 87)
    assert entry.fast_2_0 == pytest.approx(1 / 87)
    assert entry.geomean_speedup == pytest.approx(math.sqrt(1.6 * 4.0))


def test_correct_but_not_faster(owner, submit, finish):
    submission = submit(owner)
    finish(submission.jobs.get(), judge_document(speedup=1.2, lo=0.8, hi=1.6, faster=False))
    entry = LeaderboardEntry.objects.get(submission=submission)
    assert (entry.correct, entry.faster, entry.fast_1_0) == (1, 0, 0.0)


def test_listing_follows_visibility_and_flags(owner, staff, submit, finish, gpu):
    submission = submit(owner, profile="gpu-h200x8")
    finish(submission.jobs.get(), judge_document())
    entry = LeaderboardEntry.objects.get(submission=submission)
    assert not entry.listed and not entry.ranked
    submissions_services.submission_publish(submission, owner)
    entry.refresh_from_db()
    assert entry.listed and entry.ranked and submission.scores.filter(listed=True).count() == 87
    submissions_services.submission_flag(submission, "copied kernels")
    entry.refresh_from_db()
    assert entry.listed and not entry.ranked
    submissions_services.submission_set_visibility(submission, "hidden")
    entry.refresh_from_db()
    assert not entry.listed


def test_unranked_profile_never_ranks(owner, submit, finish):
    submission = submit(owner)
    finish(submission.jobs.get(), judge_document())
    submissions_services.submission_publish(submission, owner)
    entry = LeaderboardEntry.objects.get(submission=submission)
    assert entry.listed and not entry.ranked


def test_measured_cost(owner, submit, finish):
    target = submit(owner)
    finish(target.jobs.get(), judge_document())
    feedback = submit(owner, feedback_for=target.pk)
    finish(feedback.jobs.get(), judge_document(verdict="incorrect"))
    target.refresh_from_db()
    assert target.feedback_runs == 1
    assert target.gpu_seconds == pytest.approx(2.0 * 2)  # wall_s x W device-seconds


def test_problem_stats_follow_listing(owner, submit, finish):
    from leaderboard.scoring.models import ProblemStat

    submission = submit(owner)
    finish(submission.jobs.get(), judge_document())
    assert not ProblemStat.objects.filter(tried__gt=0).exists()  # private: not counted
    submissions_services.submission_publish(submission, owner)
    stat = ProblemStat.objects.get(problem_id=1, protocol="one_shot")
    assert (stat.tried, stat.solved, stat.faster, stat.best_speedup) == (1, 1, 1, 1.3)
    submissions_services.submission_set_visibility(submission, "hidden")
    stat.refresh_from_db()
    assert (stat.tried, stat.solved) == (0, 0)


@pytest.mark.django_db(transaction=True)
def test_problem_stats_do_not_lose_parallel_updates(owner, submit):
    """Two workers finish the same problem of two published submissions at once: both count (row lock)."""
    import threading

    from django.db import connection

    from leaderboard.scoring.models import ProblemStat

    jobs = []
    for _ in range(2):
        submission = submit(owner)
        submissions_services.submission_publish(submission, owner)
        jobs.append(submission.jobs.get())
    for i, job in enumerate(jobs):
        assert jobs_services.job_claim(job.pk, f"w{i}")
    barrier = threading.Barrier(2)

    def finish_one(i, job):
        barrier.wait()
        jobs_services.job_finish(job.pk, f"w{i}", judge_document())
        connection.close()

    threads = [threading.Thread(target=finish_one, args=(i, job)) for i, job in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stat = ProblemStat.objects.get(problem_id=1, protocol="one_shot")
    assert (stat.tried, stat.solved) == (2, 2)


def test_timing_flag_on_an_unranked_profile_keeps_correctness_not_speed(owner, submit, finish):
    submission = submit(owner)  # cpu-gloo: unranked
    finish(submission.jobs.get(), judge_document(flags=["timing_crosscheck"]))
    score = submission.scores.get(problem_id=1)
    assert score.flagged and score.correct and not score.faster
    entry = LeaderboardEntry.objects.get(submission=submission)
    assert (entry.correct, entry.faster, entry.flagged_results, entry.geomean_speedup) == (1, 0, 1, None)


def test_unknown_flag_on_an_unranked_profile_still_never_counts(owner, submit, finish):
    submission = submit(owner)
    finish(submission.jobs.get(), judge_document(flags=["something_new"]))
    assert not submission.scores.get(problem_id=1).correct


def test_faster_is_the_judges_decision_taken_as_stored(owner, submit, finish):
    """The judge decides "faster" once (evaluator/contract/verdict.py): an interval above 1.0 that the judge withheld
    (here: a reference block that timed its host) stays not faster, and a flagged result arrives not faster."""
    withheld = submit(owner)
    document = judge_document(speedup=2.0, lo=1.8, hi=2.2, faster=False)
    document["timing"]["reference_blocks_spun_short"] = [0]
    finish(withheld.jobs.get(), document)
    score = withheld.scores.get(problem_id=1)
    assert score.correct and not score.faster and score.result.faster is False
    assert LeaderboardEntry.objects.get(submission=withheld).faster == 0

    decided = submit(owner)
    finish(decided.jobs.get(), judge_document(speedup=2.0, lo=1.8, hi=2.2))
    score = decided.scores.get(problem_id=1)
    assert score.correct and score.faster and score.result.faster is True

    flagged = judge_document(flags=["timing_crosscheck"])
    assert flagged["timing"]["faster"] is False  # the shape of the judge's document: a flag withholds "faster"
