"""Reads shared by the HTML views and the API, so visibility rules live in one place.

Every selector that feeds a public page issues a fixed number of queries whatever the amount of data (the tests
pin the counts), and works on the materialised tables (LeaderboardEntry, ProblemScore) rather than on raw results.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections import defaultdict

from django.conf import settings
from django.core.exceptions import BadRequest
from django.db.models import Count
from django.http import Http404
from django.utils import timezone

from evaluator import schema
from leaderboard.models import (
    PROTOCOLS,
    INFRA_ERROR,
    ApiToken,
    Candidate,
    EvaluationJob,
    HardwareProfile,
    LeaderboardEntry,
    Problem,
    ProblemScore,
    ProblemStat,
    QuotaCharge,
    Result,
    Submission,
)
from leaderboard.converters import ProblemKeyConverter
from leaderboard.feedback import report

PROTOCOL_ORDER = list(PROTOCOLS)
PROTOCOL_LABELS = dict(Submission.PROTOCOLS)
SORTS = {
    "correct": ("-correct", "-faster", "-geomean_speedup", "submission_id"),
    "faster": ("-faster", "-correct", "-geomean_speedup", "submission_id"),
    "fast_1_5": ("-fast_1_5", "-faster", "-correct", "submission_id"),
    "fast_2_0": ("-fast_2_0", "-fast_1_5", "-correct", "submission_id"),
    "geomean": ("-geomean_speedup", "-correct", "submission_id"),
    "recent": ("-submission__created_at",),
}
SLUG = re.compile(r"[-a-zA-Z0-9_]{1,50}")
PROBLEM_KEY = re.compile(ProblemKeyConverter.regex)
SECTION_ROWS = 20  # per protocol on the overview; "All ... entries" pages through 50 at a time
PAGE_ROWS = 50


class BadQuery(BadRequest):
    """A query parameter that does not validate: 400 with the form's messages (views.bad_request for pages,
    leaderboard.api.errors for the API)."""

    def __init__(self, errors: dict[str, list[str]]):
        self.errors = errors
        super().__init__("; ".join(f"{field}: {' '.join(messages)}" for field, messages in errors.items()))


def query_clean(query) -> dict:
    """The query string through forms.QueryForm: cleaned values, or BadQuery."""
    from leaderboard.forms import QueryForm

    form = QueryForm(query)
    if not form.is_valid():
        raise BadQuery({field: [str(m) for m in messages] for field, messages in form.errors.items()})
    return form.cleaned_data


@dataclasses.dataclass
class Filters:
    backend: str = ""
    protocol: str = ""
    k: int | None = None
    sort: str = "correct"
    page: int = 1

    @classmethod
    def from_query(cls, query) -> "Filters":
        data = query_clean(query)
        sort = data["sort"] or "correct"
        if sort not in SORTS:
            raise BadQuery({"sort": [f"choose one of {', '.join(SORTS)}"]})
        return cls(backend=data["backend"], protocol=data["protocol"], k=data["k"], sort=sort,
                   page=data["page"] or 1)


# --- profiles and problems -----------------------------------------------------------------------------------------

def profiles() -> list[HardwareProfile]:
    return list(HardwareProfile.objects.all())


def profile_get(slug: str | None) -> HardwareProfile:
    slug = slug or settings.PKB_DEFAULT_PROFILE
    if not SLUG.fullmatch(str(slug)):
        raise BadQuery({"profile": ["a hardware profile slug: ASCII letters, digits, '-' and '_'"]})
    profile = HardwareProfile.objects.filter(slug=slug).first()
    if profile is None:
        raise Http404(f"no hardware profile {slug!r}")
    return profile


def problem_get(key: str) -> Problem:
    text = str(key)
    if not PROBLEM_KEY.fullmatch(text):  # what leaderboard.converters.ProblemKeyConverter takes
        raise Http404(f"no problem {text[:100]!r}")
    problem = (Problem.objects.filter(pk=int(text)).first() if text.isdigit()
               else Problem.objects.filter(stem=text).first())
    if problem is None:
        raise Http404(f"no problem {key!r}")
    return problem


# --- leaderboard -----------------------------------------------------------------------------------------------------

def _entries(profile: HardwareProfile, filters: Filters):
    query = (LeaderboardEntry.objects.filter(profile=profile, listed=True)
             .select_related("submission__submitter__user", "submission__profile"))
    if filters.backend:
        query = query.filter(backend=filters.backend)
    if filters.k is not None:
        query = query.filter(attempts_k=filters.k)
    return query.order_by(*SORTS[filters.sort])


def leaderboard_sections(profile: HardwareProfile, filters: Filters) -> list[dict]:
    """One ranked table per protocol (protocols are never mixed in a ranking); one query per protocol shown."""
    protocols = [filters.protocol] if filters.protocol else PROTOCOL_ORDER
    rows = PAGE_ROWS if filters.protocol else SECTION_ROWS
    offset = (filters.page - 1) * rows if filters.protocol else 0
    sections = []
    for protocol in protocols:
        entries = leaderboard_slice(profile, dataclasses.replace(filters, protocol=protocol), offset, rows + 1)
        more = len(entries) > rows
        entries = entries[:rows]
        sections.append({"protocol": protocol, "label": PROTOCOL_LABELS[protocol], "entries": entries,
                         "more": more, "offset": offset})
    return sections


def _number(entries: list[LeaderboardEntry], offset: int) -> None:
    """Rank numbers for ranked entries; flagged or unranked ones show without a rank and never take one."""
    rank = offset
    for entry in entries:
        if entry.ranked:
            rank += 1
            entry.rank = rank
        else:
            entry.rank = None


EXPORT_FIELDS = ("submission_id", "submission__model_name", "submission__agent", "submission__agent_version",
                 "submission__submitter__display_name", "submission__submitter__user__username", "protocol",
                 "attempts_k", "submission__selection_rule", "backend", "correct", "faster", "fast_1_0", "fast_1_5",
                 "fast_2_0", "geomean_speedup", "judged", "pending", "flagged_results", "ranked",
                 "submission__verified", "submission__reported_tokens", "submission__reported_dollars",
                 "submission__gpu_seconds", "submission__feedback_runs", "submission__created_at")


def leaderboard_export(profile: HardwareProfile, filters: Filters) -> list[dict]:
    """Every listed entry matching the filters as plain dicts (one query), ranked within each protocol."""
    query = _entries(profile, filters)
    if filters.protocol:
        query = query.filter(protocol=filters.protocol)
    rows = list(query.order_by("protocol", *SORTS[filters.sort]).values(*EXPORT_FIELDS))
    ranks: dict[str, int] = defaultdict(int)
    for row in rows:
        if row["ranked"]:
            ranks[row["protocol"]] += 1
        row["rank"] = ranks[row["protocol"]] if row["ranked"] else None
    return rows


def leaderboard_slice(profile: HardwareProfile, filters: Filters, offset: int, limit: int) -> list:
    """A window of one protocol's table, rank numbers included (ranks count the ranked rows before the window)."""
    query = _entries(profile, filters).filter(protocol=filters.protocol)
    ranked_before = sum(query[:offset].values_list("ranked", flat=True)) if offset else 0
    entries = list(query[offset:offset + limit])
    _number(entries, ranked_before)
    return entries


def filter_choices(profile: HardwareProfile) -> dict:
    listed = LeaderboardEntry.objects.filter(profile=profile, listed=True)
    return {
        "backends": sorted(set(listed.values_list("backend", flat=True).distinct())),
        "ks": sorted(set(listed.values_list("attempts_k", flat=True).distinct())),
        "protocols": [(p, PROTOCOL_LABELS[p]) for p in PROTOCOL_ORDER],
        "sorts": list(SORTS),
    }


# --- problems index and heatmap ------------------------------------------------------------------------------------

def problems_index(profile: HardwareProfile, protocol: str = "") -> list[Problem]:
    """The 87 problems with solve rates over listed submissions on the profile (two queries, materialised stats)."""
    stats = ProblemStat.objects.filter(profile=profile)
    if protocol:
        stats = stats.filter(protocol=protocol)
    totals: dict[int, dict] = defaultdict(lambda: {"tried": 0, "solved": 0, "faster": 0, "best": None})
    for pid, tried, solved, faster, best in stats.values_list("problem_id", "tried", "solved", "faster",
                                                              "best_speedup"):
        row = totals[pid]
        row["tried"] += tried
        row["solved"] += solved
        row["faster"] += faster
        if best is not None and (row["best"] is None or best > row["best"]):
            row["best"] = best
    problems = list(Problem.objects.defer("docstring", "reference_source", "reference_html"))
    for problem in problems:
        row = totals.get(problem.id) or {"tried": 0, "solved": 0, "faster": 0, "best": None}
        problem.tried, problem.solved, problem.faster_count, problem.best = (row["tried"], row["solved"],
                                                                              row["faster"], row["best"])
        problem.solve_rate = problem.solved / problem.tried if problem.tried else None
    return problems


def heatmap(profile: HardwareProfile, protocol: str = "", limit: int = 40) -> dict:
    """Submissions x problems: the top ``limit`` listed entries and their 87 statuses (two queries)."""
    entries = LeaderboardEntry.objects.filter(profile=profile, listed=True)
    if protocol:
        entries = entries.filter(protocol=protocol)
    top = list(entries.order_by(*SORTS["correct"]).values_list(
        "submission_id", "submission__model_name", "submission__agent", "protocol", "attempts_k")[:limit])
    ids = [row[0] for row in top]
    grid = defaultdict(dict)
    for sid, pid, status, correct, faster, speedup in ProblemScore.objects.filter(submission_id__in=ids).values_list(
            "submission_id", "problem_id", "status", "correct", "faster", "speedup"):
        grid[sid][pid] = (status, correct, faster, speedup)
    return {"rows": top, "grid": grid}


# --- one problem -------------------------------------------------------------------------------------------------------

def problem_scores(problem: Problem, profile: HardwareProfile, protocol: str = "", page: int = 1) -> dict:
    """Every listed submission's outcome on one problem: a page of rows and all points for the strip plot."""
    scores = (ProblemScore.objects.filter(problem=problem, profile=profile, listed=True)
              .exclude(status=ProblemScore.NO_CANDIDATE))
    if protocol:
        scores = scores.filter(protocol=protocol)
    offset = (page - 1) * PAGE_ROWS
    rows = list(scores.order_by("protocol", "-correct", "-faster", "-speedup", "submission_id").values(
        "submission_id", "submission__model_name", "submission__submitter__user__username",
        "submission__submitter__display_name", "protocol", "attempt", "attempts_total", "status", "flagged", "faster",
        "correct", "speedup", "speedup_lo", "speedup_hi", "problem_id", "attempts_correct")[offset:offset + PAGE_ROWS + 1])
    points = list(scores.values_list("submission_id", "submission__model_name", "protocol", "status", "speedup",
                                     "speedup_lo", "speedup_hi", "correct", "flagged"))
    return {"rows": rows[:PAGE_ROWS], "more": len(rows) > PAGE_ROWS, "points": points, "page": page}


# --- submissions -------------------------------------------------------------------------------------------------------

def submission_get(pk: int, user) -> Submission:
    submission = (Submission.objects.select_related("submitter__user", "profile", "entry", "feedback_for")
                  .filter(pk=pk).first())
    if submission is None or not submission.visible_to(user):
        raise Http404("no such submission")
    return submission


def submission_grid(submission: Submission) -> list[dict]:
    """Per problem (all 87): the score and every attempt with its job and current result (five queries).

    Rows are plain dicts and tuples (no model instances for the 87 x k attempts): the page must stay fast.
    """
    problems = list(Problem.objects.order_by("id").values_list("id", "stem"))
    scores = {s.problem_id: s for s in ProblemScore.objects.filter(submission=submission).only(
        "problem_id", "status", "attempt", "correct", "faster", "flagged", "speedup", "speedup_lo", "speedup_hi")}
    jobs = {row[1]: row for row in EvaluationJob.objects.filter(submission=submission).values_list(
        "id", "candidate_id", "status", "run", "last_error")}
    results: dict = {}
    for row in Result.objects.filter(job__submission=submission).order_by("id").values_list(
            "id", "job_id", "run", "verdict", "message", "flags", "document__timing__pairs__set_aside",
            "document__timing__crosscheck", "document__timing__pairs__probe",
            "document__timing__reference_blocks_spun_short", "document__timing__reference_spun_short_pairs"):
        results.setdefault((row[1], row[2]), []).append(row)
    attempts = defaultdict(list)
    for cid, pid, attempt in Candidate.objects.filter(submission=submission).order_by("attempt").values_list(
            "id", "problem_id", "attempt"):
        attempts[pid].append(_attempt_cell(cid, attempt, jobs.get(cid), results))
    return [{"problem": {"id": pid, "stem": stem}, "score": scores.get(pid), "attempts": attempts.get(pid, [])}
            for pid, stem in problems]


def _attempt_cell(candidate_id: int, attempt: int, job, results) -> dict:
    """One attempt: its job's status and the current run's final result (infra errors are retries, not verdicts)."""
    history = results.get((job[0], job[3]), []) if job else []
    final = next((r for r in reversed(history) if r[3] != schema.INFRA_ERROR), None)
    return {"candidate_id": candidate_id, "attempt": attempt, "judged": job is not None,
            "status": final[3] if final else (job[2] if job else "not_judged"),
            "result_id": final[0] if final else None, "message": final[4] if final else "",
            "flags": final[5] if final else [], "retries": sum(1 for r in history if r[3] == schema.INFRA_ERROR),
            # Timing pairs whose cross-check was suspect, left out of the speedup (evaluator/pairs.py, triage).
            "set_aside": len(final[6]) if final and isinstance(final[6], list) else 0,
            "timing_note": _timing_note(final),
            "failed": bool(job and job[2] == "failed"), "error": job[4] if job else ""}


def _timing_note(final) -> str:
    """Why a final result's timing was flagged by the cross-check (its numbers), or why an interval above 1.0 was
    not called faster; or nothing."""
    if not final:
        return ""
    if schema.FLAG_TIMING_CROSSCHECK in (final[5] or []) and isinstance(final[7], dict):
        return report.crosscheck_line(final[7], final[8] if isinstance(final[8], dict) else None)
    return report.withheld_line({"reference_blocks_spun_short": final[9] if isinstance(final[9], list) else None,
                                 "reference_spun_short_pairs": final[10] if isinstance(final[10], list) else None})


def submission_environment(submission: Submission) -> dict:
    """Where the latest result ran (GPU, driver, torch, NCCL...): public, unlike logs."""
    # No ORDER BY: sorting on the result id would walk the whole results index; any final result tells the host.
    value = next(iter(Result.objects.filter(job__submission=submission).exclude(verdict="infra_error").order_by()
                      .values_list("document__environment", flat=True)[:1]), None)
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if k != "sandbox"}  # the sandbox has a line of its own


def submission_sandbox(submission: Submission) -> dict:
    """Whether the submission's candidates ran inside the whole sandbox, as one line for people (one query): ``ok``
    True when every judged result did, False when any did not (its own line, saying what was missing), None when no
    result records it (judged before the judge recorded it, or not judged yet)."""
    rows = list(Result.objects.filter(job__submission=submission).exclude(verdict="infra_error").order_by()
                .values_list("document__environment__sandbox__complete", "document__environment__sandbox__summary")
                .distinct()[:20])
    recorded = [(complete, line) for complete, line in rows if isinstance(complete, bool)]
    if not recorded:
        return {"ok": None, "line": "not recorded for these results"}
    unsandboxed = [line for complete, line in recorded if not complete]
    if unsandboxed:
        return {"ok": False, "line": str(unsandboxed[0] or "UNSANDBOXED")}
    return {"ok": True, "line": "every candidate ran sandboxed: its own uid, no network, a private filesystem view, "
                                "no process outliving the job"}


def submission_status(submission: Submission) -> dict:
    """Live status: job counts and each problem's current status (two queries)."""
    counts = dict(EvaluationJob.objects.filter(submission=submission).values_list("status").annotate(n=Count("id")))
    scores = dict(ProblemScore.objects.filter(submission=submission).exclude(status=ProblemScore.NO_CANDIDATE)
                  .values_list("problem_id", "status"))
    entry = LeaderboardEntry.objects.filter(submission=submission).values(
        "correct", "faster", "judged", "pending", "geomean_speedup").first() or {}
    jobs = {s: counts.get(s, 0) for s in ("queued", "running", "done", "failed")}
    return {"submission": submission.pk, "jobs": jobs, "finished": jobs["queued"] + jobs["running"] == 0,
            "problems": {str(k): v for k, v in scores.items()}, "entry": entry, "files": _job_files(submission)}


def _job_files(submission: Submission) -> list[dict]:
    """Each uploaded file's job and, once its current run has a final result, the verdict (two queries): what
    ``pkb submit --wait`` prints as each one lands."""
    jobs = list(EvaluationJob.objects.filter(submission=submission)
                .values("id", "status", "run", "candidate__filename", "candidate__problem_id", "candidate__attempt")
                .order_by("candidate__problem_id", "candidate__attempt", "id"))
    finals = {(r["job_id"], r["run"]): r for r in Result.objects.filter(job__submission=submission)
              .exclude(verdict=INFRA_ERROR).values("job_id", "run", "verdict", "speedup", "faster", "message")}
    out = []
    for job in jobs:
        final = finals.get((job["id"], job["run"])) or {}
        out.append({"job": job["id"], "file": job["candidate__filename"], "problem": job["candidate__problem_id"],
                    "attempt": job["candidate__attempt"], "status": job["status"], "verdict": final.get("verdict"),
                    "speedup": final.get("speedup"), "faster": bool(final.get("faster")),
                    "message": (final.get("message") or "")[:300]})
    return out


def result_for_viewer(result_id: int, user) -> Result:
    result = Result.objects.select_related("job__submission__submitter__user", "job__candidate__problem").filter(
        pk=result_id).first()
    if result is None or not result.job.submission.visible_to(user):
        raise Http404("no such result")
    return result


def candidate_for_viewer(candidate_id: int, user) -> Candidate:
    candidate = Candidate.objects.select_related("submission__submitter__user", "problem").filter(
        pk=candidate_id).first()
    if candidate is None or not candidate.submission.code_visible_to(user):
        raise Http404("no such candidate")
    return candidate


def submissions_of(user) -> list[Submission]:
    # submitter__user: the API's rows name the submitter (one query for all rows, not two per row).
    return list(Submission.objects.filter(submitter__user=user).select_related("submitter__user", "profile", "entry")
                .order_by("-created_at")[:200])


def tokens_of(user) -> list[ApiToken]:
    return list(ApiToken.objects.filter(submitter__user=user).order_by("-created_at"))


def quota_status(submitter) -> dict:
    from datetime import timedelta

    from django.utils import timezone

    from leaderboard.models import QuotaCharge

    now = timezone.now()
    usage = quota_usage(submitter, now)
    limits = submitter.limits()
    oldest = (QuotaCharge.objects.filter(submitter=submitter, refunded_at__isnull=True,
                                         created_at__gt=now - timedelta(days=1))
              .order_by("created_at").values_list("created_at", flat=True).first())
    return {"usage": usage, "limits": limits,
            "daily_left": max(0, limits["daily"] - usage["daily"]),
            "concurrent_left": max(0, limits["concurrent"] - usage["concurrent"]),
            "total_left": max(0, limits["total"] - usage["total"]),
            "next_daily_slot": oldest + timedelta(days=1) if oldest and usage["daily"] >= limits["daily"] else None}


def quota_usage(submitter, now=None) -> dict:
    """A submitter's live charges: in the rolling day, in total, and jobs queued or running (services.quota_reserve
    checks them against the limits; the account page shows them)."""
    now = now or timezone.now()
    live = QuotaCharge.objects.filter(submitter=submitter, refunded_at__isnull=True)
    return {
        "daily": live.filter(created_at__gt=now - dt.timedelta(days=1)).count(),
        "total": live.count(),
        "concurrent": EvaluationJob.objects.filter(submitter=submitter,
                                                   status__in=(EvaluationJob.QUEUED, EvaluationJob.RUNNING)).count(),
    }
