"""Tables people can work with: the problem list searched, filtered by category and sorted through query parameters
(no JavaScript needed); a leaderboard table paged with a page count (past the last page: 404); the heatmap's top rows
of each protocol; code with numbered lines."""

import re

import pytest

from leaderboard.catalogue.models import Problem
from leaderboard.scoring import selectors as scoring_selectors
from leaderboard.submissions import services as submissions_services
from tests.site.conftest import GOOD_1

pytestmark = pytest.mark.django_db


def row_ids(page: str) -> list[int]:
    return [int(i) for i in re.findall(r'<tr data-id="(\d+)"', page)]


def test_problem_list_search_category_and_sort_without_javascript(client, cpu):
    everything = row_ids(client.get("/problems/").content.decode())
    assert len(everything) == Problem.objects.count() == 87 and everything == sorted(everything)
    found = client.get("/problems/?q=allreduce").content.decode()
    assert row_ids(found) and all(
        "allreduce" in f"{p.stem} {p.title}".lower() for p in Problem.objects.filter(pk__in=row_ids(found))
    )
    assert "of 87 problems" in found
    category = Problem.objects.values_list("category", flat=True).order_by("category").first()
    in_category = row_ids(client.get("/problems/", {"category": category}).content.decode())
    assert sorted(in_category) == sorted(Problem.objects.filter(category=category).values_list("pk", flat=True))
    descending = client.get("/problems/?order=id&dir=desc").content.decode()
    assert row_ids(descending) == sorted(everything, reverse=True)
    assert 'aria-sort="descending"' in descending
    by_name = row_ids(client.get("/problems/?order=problem").content.decode())
    assert by_name == [p.pk for p in sorted(Problem.objects.all(), key=lambda p: p.stem)]
    assert row_ids(client.get("/problems/?order=nonsense&category=nonsense").content.decode()) == everything


def publish(owner, n: int, protocol="one_shot", attempts=1):
    done = []
    for i in range(n):
        submission = submissions_services.submission_create(
            owner.submitter,
            {"model": f"m{i}", "protocol": protocol, "attempts": attempts, "profile": "cpu-gloo"},
            [("1_allreduce_torch.py", GOOD_1 + f"\n# {protocol} {i}\n".encode())],
        )
        submissions_services.submission_publish(submission, owner)
        done.append(submission)
    return done


def test_leaderboard_pages_with_previous_next_and_a_count(client, owner, cpu, monkeypatch):
    monkeypatch.setattr(scoring_selectors, "PAGE_ROWS", 2)
    publish(owner, 5)
    first = client.get("/leaderboard/cpu-gloo/?protocol=one_shot").content.decode()
    assert "Page 1 of 3 (5 entries)" in first and 'rel="next"' in first and 'rel="prev"' not in first
    middle = client.get("/leaderboard/cpu-gloo/?protocol=one_shot&page=2").content.decode()
    assert "Page 2 of 3" in middle and 'rel="next"' in middle and 'rel="prev"' in middle
    last = client.get("/leaderboard/cpu-gloo/?protocol=one_shot&page=3").content.decode()
    assert "Page 3 of 3" in last and 'rel="next"' not in last
    assert client.get("/leaderboard/cpu-gloo/?protocol=one_shot&page=4").status_code == 404
    # An empty table has its one (empty) page, and nothing past it.
    assert client.get("/leaderboard/cpu-gloo/?protocol=best_of_k").status_code == 200
    assert client.get("/leaderboard/cpu-gloo/?protocol=best_of_k&page=2").status_code == 404


def test_heatmap_keeps_the_top_rows_of_each_protocol(owner, cpu):
    publish(owner, 3)
    publish(owner, 1, protocol="best_of_k", attempts=2)
    rows = scoring_selectors.heatmap(cpu, per_protocol=2)["rows"]
    protocols = [row[3] for row in rows]
    assert protocols.count("one_shot") == 2 and protocols.count("best_of_k") == 1
    assert len(scoring_selectors.heatmap(cpu, "one_shot")["rows"]) == 3


def test_code_page_numbers_its_lines(client, owner, cpu):
    submission = publish(owner, 1)[0]
    candidate = submission.candidates.get()
    page = client.get(f"/candidates/{candidate.pk}/").content.decode()
    lines = candidate.code.splitlines()
    assert page.count('class="line" id="L') == len(lines)
    assert f'id="L{len(lines)}"><a class="ln" href="#L{len(lines)}"' in page


def test_a_message_citing_a_line_links_to_it_escaped(client, owner, cpu):
    from leaderboard.jobs.models import EvaluationJob, Result

    submission = publish(owner, 1)[0]
    job = submission.jobs.get()
    EvaluationJob.objects.filter(pk=job.pk).update(status="done")
    Result.objects.create(
        job=job,
        run=job.run,
        verdict="compile_error",
        message="SyntaxError: invalid syntax (1_allreduce_torch.py, line 4) <b>x</b>",
    )
    page = client.get(submission.get_absolute_url()).content.decode()
    candidate = submission.candidates.get()
    assert f'<a href="/candidates/{candidate.pk}/#L4">line 4</a>' in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page
