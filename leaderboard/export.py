"""JSON and CSV for every table: the page's view builds (columns, rows) and hands them here when ?format= asks."""
from __future__ import annotations

import csv
import io

from django.http import HttpResponse, JsonResponse

FORMATS = ("csv", "json")


def wanted(request) -> str | None:
    value = request.GET.get("format", "")
    return value if value in FORMATS else None


def table_response(fmt: str, name: str, columns: list[str], rows: list[list]) -> HttpResponse:
    if fmt == "json":
        response = JsonResponse({"table": name, "columns": columns,
                                 "rows": [dict(zip(columns, row)) for row in rows]},
                                json_dumps_params={"default": str})
    else:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(columns)
        for row in rows:
            writer.writerow(["" if v is None else v for v in row])
        response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{name}.csv"'
    return response


def leaderboard_table(entries) -> tuple[list[str], list[list]]:
    columns = ["rank", "submission", "model", "agent", "agent_version", "submitter", "protocol", "k", "selection",
               "backend", "correct_of_87", "faster_of_87", "fast_1_0", "fast_1_5", "fast_2_0", "geomean_speedup",
               "judged", "pending", "flagged_results", "ranked", "verified", "reported_tokens", "reported_dollars",
               "measured_gpu_seconds", "measured_feedback_runs", "created_at"]
    rows = []
    for e in entries:
        s = e.submission
        rows.append([getattr(e, "rank", None), s.pk, s.model_name, s.agent, s.agent_version, s.submitter.name,
                     e.protocol, e.attempts_k, s.selection_rule, e.backend, e.correct, e.faster,
                     round(e.fast_1_0, 4), round(e.fast_1_5, 4), round(e.fast_2_0, 4),
                     None if e.geomean_speedup is None else round(e.geomean_speedup, 4), e.judged, e.pending,
                     e.flagged_results, e.ranked, s.verified, s.reported_tokens,
                     None if s.reported_dollars is None else str(s.reported_dollars), round(s.gpu_seconds, 1),
                     s.feedback_runs, s.created_at.isoformat()])
    return columns, rows


def problems_table(problems) -> tuple[list[str], list[list]]:
    columns = ["id", "stem", "title", "category", "implemented", "submissions", "solved", "faster", "solve_rate",
               "best_speedup", "bytes_per_rank", "flops_per_rank"]
    rows = [[p.id, p.stem, p.title, p.category, p.implemented, p.tried, p.solved, p.faster_count,
             None if p.solve_rate is None else round(p.solve_rate, 4),
             None if p.best is None else round(p.best, 4), p.bytes_per_rank, p.flops_per_rank] for p in problems]
    return columns, rows


def problem_scores_table(points) -> tuple[list[str], list[list]]:
    columns = ["submission", "model", "protocol", "status", "speedup", "speedup_lo", "speedup_hi", "correct",
               "flagged"]
    return columns, [list(p) for p in points]


def submission_table(grid) -> tuple[list[str], list[list]]:
    columns = ["problem_id", "stem", "selected_attempt", "status", "correct", "faster", "flagged", "speedup",
               "speedup_lo", "speedup_hi", "attempts"]
    rows = []
    for row in grid:
        s = row["score"]
        rows.append([row["problem"]["id"], row["problem"]["stem"], s.attempt if s else None, s.status if s else "missing",
                     bool(s and s.correct), bool(s and s.faster), bool(s and s.flagged), s.speedup if s else None,
                     s.speedup_lo if s else None, s.speedup_hi if s else None, len(row["attempts"])])
    return columns, rows
