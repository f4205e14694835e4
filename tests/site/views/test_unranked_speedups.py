"""Noise is never a headline: on an unranked profile (CPU wall clock) speedups show only beside their interval and
marked unranked, never as the lead number ("Geomean speedup", "Best speedup") or a key rows are sorted on; a ranked
profile (GPU) keeps both."""

import re

from leaderboard.scoring.models import LeaderboardEntry
from leaderboard.submissions import services as submissions_services
from tests.site.conftest import judge_document


def two_published(owner, submit, finish, **profile):
    """The first slow (0.62x), the second "fast" (1.61x, an A/A pair's noise on a CPU): both correct."""
    made = []
    for name, speedup, lo, hi in (("slow", 0.62, 0.4, 0.9), ("fast", 1.61, 0.9, 2.6)):
        submission = submit(owner, model=name, **profile)
        finish(submission.jobs.get(), judge_document(speedup=speedup, lo=lo, hi=hi, faster=False))
        submissions_services.submission_publish(submission, owner)
        made.append(submission)
    return made


def rows_order(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'<tr data-submission="(\d+)"', html)]


def test_on_a_cpu_profile_no_speedup_leads_or_sorts(owner, submit, finish, cpu, client):
    slow, fast = two_published(owner, submit, finish)
    assert LeaderboardEntry.objects.get(submission=fast).geomean_speedup > 1.5  # stored, but never shown as lead
    board = client.get("/leaderboard/cpu-gloo/?sort=geomean").content.decode()
    assert rows_order(board) == [slow.pk, fast.pk] and "1.61" not in board and ">unranked<" in board
    problems = client.get("/problems/?profile=cpu-gloo").content.decode()
    assert "Best speedup" not in problems and "1.61" not in problems
    problem = client.get("/problems/1_allreduce/?profile=cpu-gloo").content.decode()
    table = problem.split('<table class="scores">')[1]
    assert rows_order(table) == [slow.pk, fast.pk] and ">unranked<" in table
    assert re.search(r"1\.61.*?\[0\.90, 2\.60\]", table, re.DOTALL)  # the number only beside its interval
    page = client.get(f"/submissions/{fast.pk}/").content.decode()
    assert "Geomean speedup" not in page and 'id="unranked-speedups"' in page


def test_on_a_gpu_profile_the_speedups_rank(owner, submit, finish, gpu, client):
    slow, fast = two_published(owner, submit, finish, profile="gpu-h200x8")
    board = client.get("/leaderboard/gpu-h200x8/?sort=geomean").content.decode()
    assert rows_order(board) == [fast.pk, slow.pk] and "1.61" in board
    assert "Best speedup" in client.get("/problems/?profile=gpu-h200x8").content.decode()
    table = client.get("/problems/1_allreduce/?profile=gpu-h200x8").content.decode().split('<table class="scores">')[1]
    assert rows_order(table) == [fast.pk, slow.pk]
