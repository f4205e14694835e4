"""JSON and CSV for every table: the page's view builds (columns, rows) and hands them here when ?format= asks."""

from __future__ import annotations

import csv
import io

from django.http import HttpResponse, JsonResponse

from leaderboard.scoring import costs

FORMATS = ("csv", "json")


def wanted(request) -> str | None:
    value = request.GET.get("format", "")
    return value if value in FORMATS else None


def table_response(fmt: str, name: str, columns: list[str], rows: list[list]) -> HttpResponse:
    if fmt == "json":
        response = JsonResponse(
            {"table": name, "columns": columns, "rows": [dict(zip(columns, row, strict=False)) for row in rows]},
            json_dumps_params={"default": str},
        )
    else:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_cell(v) for v in row])
        response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{name}.csv"'
    return response


def leaderboard_table(rows: list[dict]) -> tuple[list[str], list[list]]:
    columns = [
        "rank",
        "submission",
        "model",
        "agent",
        "agent_version",
        "submitter",
        "protocol",
        "k",
        "selection",
        "backend",
        "correct_of_87",
        "faster_of_87",
        "fast_1_0",
        "fast_1_5",
        "fast_2_0",
        "geomean_speedup",
        "geomean_peak_fraction",
        "peak_fraction_problems",
        "audit",
        "audited_results",
        "judged",
        "pending",
        "flagged_results",
        "ranked",
        "verified",
        "reported_tokens",
        "reported_dollars",
        *costs.EXPORT_COLUMNS,
        "created_at",
    ]
    measured = costs.for_submissions(r["submission_id"] for r in rows)  # two queries for every row
    out = []
    for r in rows:
        geomean = r["geomean_speedup"]
        dollars = r["submission__reported_dollars"]
        out.append(
            [
                r["rank"],
                r["submission_id"],
                r["submission__model_name"],
                r["submission__agent"],
                r["submission__agent_version"],
                r["submission__submitter__display_name"] or r["submission__submitter__user__username"],
                r["protocol"],
                r["attempts_k"],
                r["submission__selection_rule"],
                r["backend"],
                r["correct"],
                r["faster"],
                round(r["fast_1_0"], 4),
                round(r["fast_1_5"], 4),
                round(r["fast_2_0"], 4),
                None if geomean is None else round(geomean, 4),
                _round(r["geomean_peak_fraction"], 5),
                r["peak_problems"],
                r["audit"] or None,
                r["audited_results"],
                r["judged"],
                r["pending"],
                r["flagged_results"],
                r["ranked"],
                r["submission__verified"],
                r["submission__reported_tokens"],
                None if dollars is None else str(dollars),
                *costs.export_values(measured[r["submission_id"]]),
                r["submission__created_at"].isoformat(),
            ]
        )
    return columns, out


def problems_table(problems) -> tuple[list[str], list[list]]:
    columns = [
        "id",
        "stem",
        "title",
        "category",
        "implemented",
        "submissions",
        "solved",
        "faster",
        "solve_rate",
        "best_speedup",
        "best_peak_fraction",
        "bytes_per_rank",
        "flops_per_rank",
    ]
    rows = [
        [
            p.id,
            p.stem,
            p.title,
            p.category,
            p.implemented,
            p.tried,
            p.solved,
            p.faster_count,
            None if p.solve_rate is None else round(p.solve_rate, 4),
            None if p.best is None else round(p.best, 4),
            _round(p.best_peak, 5),
            p.bytes_per_rank,
            p.flops_per_rank,
        ]
        for p in problems
    ]
    return columns, rows


def problem_scores_table(points) -> tuple[list[str], list[list]]:
    columns = [
        "submission",
        "model",
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
    ]
    return columns, [list(p[:-1]) + [p[-1] or None] for p in points]


def submission_table(grid) -> tuple[list[str], list[list]]:
    columns = [
        "problem_id",
        "stem",
        "selected_attempt",
        "status",
        "correct",
        "faster",
        "flagged",
        "speedup",
        "speedup_lo",
        "speedup_hi",
        "peak_fraction",
        "peak_fraction_lo",
        "peak_fraction_hi",
        "peak_note",
        "audit",
        "attempts",
    ]
    rows = []
    for row in grid:
        s = row["score"]
        rows.append(
            [
                row["problem"]["id"],
                row["problem"]["stem"],
                s.attempt if s else None,
                s.status if s else "missing",
                bool(s and s.correct),
                bool(s and s.faster),
                bool(s and s.flagged),
                s.speedup if s else None,
                s.speedup_lo if s else None,
                s.speedup_hi if s else None,
                s.peak_fraction if s else None,
                s.peak_fraction_lo if s else None,
                s.peak_fraction_hi if s else None,
                (s.peak_note or None) if s else None,
                (s.audit or None) if s else None,
                len(row["attempts"]),
            ]
        )
    return columns, rows


def _round(value, digits):
    return None if value is None else round(value, digits)


# A text cell that a spreadsheet would read as a formula (=HYPERLINK(...), +cmd|..., @SUM) when a user opens the
# export: a model or agent name is the submitter's text. Prefixed with an apostrophe, as OWASP advises.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value):
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def audits_table(audits) -> tuple[list[str], list[list]]:
    columns = ["submission", "model", "profile", "problem", "verdict", "note", "auditor", "updated_at"]
    return columns, [
        [
            a.submission_id,
            a.submission.model_name,
            a.submission.profile.slug,
            a.problem.stem if a.problem_id else None,
            a.verdict,
            a.note,
            a.auditor.get_username(),
            a.updated_at.isoformat(),
        ]
        for a in audits
    ]
