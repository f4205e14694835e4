"""Reads for the problem pages, shared by the HTML views and the API: the 87 problems with their solve rates over
listed submissions (the problems index; its heatmap is the leaderboard's read, selectors.py), and one problem's scores
on a profile, a page of rows and every point for its plots. Fixed query counts, on the materialised tables
(ProblemStat, ProblemScore).
"""

from __future__ import annotations

from collections import defaultdict

from django.db.models import F

from leaderboard.catalogue.models import HardwareProfile, Problem
from leaderboard.scoring.models import ProblemScore, ProblemStat
from leaderboard.scoring.selectors import PAGE_ROWS, order_for


def problems_index(profile: HardwareProfile, protocol: str = "") -> list[Problem]:
    """The 87 problems with solve rates over listed submissions on the profile (two queries, materialised stats)."""
    stats = ProblemStat.objects.filter(profile=profile)
    if protocol:
        stats = stats.filter(protocol=protocol)
    totals: dict[int, dict] = defaultdict(lambda: {"tried": 0, "solved": 0, "faster": 0, "best": None, "peak": None})
    for pid, tried, solved, faster, best, peak in stats.values_list(
        "problem_id", "tried", "solved", "faster", "best_speedup", "best_peak_fraction"
    ):
        row = totals[pid]
        row["tried"] += tried
        row["solved"] += solved
        row["faster"] += faster
        if best is not None and (row["best"] is None or best > row["best"]):
            row["best"] = best
        if peak is not None and (row["peak"] is None or peak > row["peak"]):
            row["peak"] = peak
    problems = list(Problem.objects.defer("docstring", "reference_source", "reference_html"))
    for problem in problems:
        row = totals.get(problem.id) or {"tried": 0, "solved": 0, "faster": 0, "best": None, "peak": None}
        problem.tried, problem.solved, problem.faster_count, problem.best = (
            row["tried"],
            row["solved"],
            row["faster"],
            row["best"],
        )
        problem.best_peak = row["peak"]
        problem.solve_rate = problem.solved / problem.tried if problem.tried else None
    return problems


def problem_scores(problem: Problem, profile: HardwareProfile, protocol: str = "", page: int = 1) -> dict:
    """Every listed submission's outcome on one problem: a page of rows and all points for the plots.

    Rows are sorted by speedup within each protocol, fastest first (correct and unflagged before the rest, then
    the ones without a number), so the table reads as the ranking of the problem."""
    scores = ProblemScore.objects.filter(problem=problem, profile=profile, listed=True).exclude(
        status=ProblemScore.NO_CANDIDATE
    )
    if protocol:
        scores = scores.filter(protocol=protocol)
    offset = (page - 1) * PAGE_ROWS
    rows = list(
        scores.order_by(
            "protocol",
            *order_for(profile, ["-correct", F("speedup").desc(nulls_last=True), "-faster", "submission_id"]),
        ).values(
            "submission_id",
            "submission__model_name",
            "submission__submitter__user__username",
            "submission__submitter__display_name",
            "protocol",
            "attempt",
            "attempts_total",
            "status",
            "flagged",
            "faster",
            "correct",
            "speedup",
            "speedup_lo",
            "speedup_hi",
            "problem_id",
            "attempts_correct",
            "peak_fraction",
            "peak_fraction_lo",
            "peak_fraction_hi",
            "peak_note",
            "audit",
        )[offset : offset + PAGE_ROWS + 1]
    )
    points = list(scores.values_list(*POINT_FIELDS))
    return {"rows": rows[:PAGE_ROWS], "more": len(rows) > PAGE_ROWS, "points": points, "page": page}


# The plots' and the problem export's columns, in this order (scoring/plots.py, export.problem_scores_table).
POINT_FIELDS = (
    "submission_id",
    "submission__model_name",
    "protocol",
    "status",
    "speedup",
    "speedup_lo",
    "speedup_hi",
    "correct",
    "flagged",
    "peak_fraction",
    "peak_fraction_lo",
    "peak_fraction_hi",
    "audit",
)
