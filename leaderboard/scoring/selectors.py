"""Reads for the leaderboards, shared by the HTML views and the API: the query's filters and sorts, each protocol's
table (paged, rank numbers included), its export and the API's rows, the filters' choices, the heatmap's top entries,
the audits. The problem pages' reads are problem_selectors.py's, a submission page's submission_selectors.py's.

Every selector that feeds a public page issues a fixed number of queries whatever the amount of data (the tests
pin the counts), and works on the materialised tables (LeaderboardEntry, ProblemScore) rather than on raw results.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

from django.db.models import F
from django.http import Http404

from leaderboard.catalogue.models import HardwareProfile
from leaderboard.scoring.forms import QueryForm
from leaderboard.scoring.models import Audit, LeaderboardEntry, ProblemScore
from leaderboard.submissions.models import Submission, Transcript
from leaderboard.submissions.uploads.metadata import PROTOCOLS
from leaderboard.validators import BadQuery

PROTOCOL_ORDER = list(PROTOCOLS)
PROTOCOL_LABELS = dict(Submission.PROTOCOLS)
SORTS = {
    "correct": ("-correct", "-faster", "-geomean_speedup", "submission_id"),
    "faster": ("-faster", "-correct", "-geomean_speedup", "submission_id"),
    "fast_1_5": ("-fast_1_5", "-faster", "-correct", "submission_id"),
    "fast_2_0": ("-fast_2_0", "-fast_1_5", "-correct", "submission_id"),
    "geomean": (F("geomean_speedup").desc(nulls_last=True), "-correct", "submission_id"),
    # Peak fraction: entries with no number (no ceilings, nothing correct) after every entry that has one.
    "peak": (F("geomean_peak_fraction").desc(nulls_last=True), "-correct", "submission_id"),
    "recent": ("-submission__created_at",),
}
# On an unranked profile (CPU: wall-clock timings on a shared host) no speedup orders anything: a point speedup there
# is noise as often as not (an A/A pair can read 1.6x), so rows are never sorted on one, whatever ?sort= asks.
_SPEED_KEYS = ("geomean_speedup", "geomean_peak_fraction", "speedup", "fast_1_5", "fast_2_0")


def order_for(profile: HardwareProfile, keys) -> list:
    """``keys`` (one of SORTS' orders) as ``profile`` may use them: unranked profiles drop every speed key."""
    if profile.ranked:
        return list(keys)
    kept = [k for k in keys if not any(name in str(k) for name in _SPEED_KEYS)]
    return kept or ["-correct", "submission_id"]


SECTION_ROWS = 20  # per protocol on the overview; "All ... entries" pages through 50 at a time
PAGE_ROWS = 50


def query_clean(query) -> dict:
    """The query string through scoring/forms.py QueryForm: cleaned values, or BadQuery."""
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
    def from_query(cls, query) -> Filters:
        data = query_clean(query)
        sort = data["sort"] or "correct"
        if sort not in SORTS:
            raise BadQuery({"sort": [f"choose one of {', '.join(SORTS)}"]})
        return cls(backend=data["backend"], protocol=data["protocol"], k=data["k"], sort=sort, page=data["page"] or 1)


def _entries(profile: HardwareProfile, filters: Filters):
    query = LeaderboardEntry.objects.filter(profile=profile, listed=True).select_related(
        "submission__submitter__user", "submission__profile"
    )
    if filters.backend:
        query = query.filter(backend=filters.backend)
    if filters.k is not None:
        query = query.filter(attempts_k=filters.k)
    return query.order_by(*order_for(profile, SORTS[filters.sort]))


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
        _attach_transcripts(entries)
        section = {
            "protocol": protocol,
            "label": PROTOCOL_LABELS[protocol],
            "entries": entries,
            "more": more,
            "offset": offset,
        }
        if filters.protocol:  # one protocol's table, paged: its page count, and no empty page past the last
            total = _entries(profile, filters).filter(protocol=protocol).count()
            section.update(total=total, pages=max(1, -(-total // rows)), page=filters.page)
            if filters.page > section["pages"]:
                raise Http404(f"page {filters.page} of {section['pages']}")
        sections.append(section)
    return sections


def _attach_transcripts(entries: list) -> None:
    """Each listed entry's first transcript (the cell links it) and how many it has: one query for the section."""
    found: dict[int, list[int]] = defaultdict(list)
    for sid, tid in (
        Transcript.objects.filter(submission_id__in=[e.submission_id for e in entries])
        .order_by("problem_id", "attempt", "filename")
        .values_list("submission_id", "id")
    ):
        found[sid].append(tid)
    for entry in entries:
        ids = found.get(entry.submission_id, [])
        entry.transcript_id, entry.transcripts = (ids[0] if ids else None), len(ids)


def audits_visible(user, submission_id: int | None = None, limit: int = 500) -> list[Audit]:
    """Audits of listed submissions (staff: of every submission), newest first; one query."""
    query = Audit.objects.select_related("submission__profile", "problem", "auditor").order_by("-updated_at")
    if not (user and user.is_authenticated and user.is_staff):
        query = query.filter(submission__visibility="public")
    if submission_id:
        query = query.filter(submission_id=submission_id)
    return list(query[:limit])


def _rank_numbers(ranked: list[bool], before: int) -> list[int | None]:
    """Rank numbers after ``before`` ranked rows; flagged or unranked rows show without a rank and never take one."""
    numbers = []
    for flag in ranked:
        before += bool(flag)
        numbers.append(before if flag else None)
    return numbers


EXPORT_FIELDS = (
    "submission_id",
    "submission__model_name",
    "submission__agent",
    "submission__agent_version",
    "submission__submitter__display_name",
    "submission__submitter__user__username",
    "protocol",
    "attempts_k",
    "submission__selection_rule",
    "backend",
    "correct",
    "faster",
    "fast_1_0",
    "fast_1_5",
    "fast_2_0",
    "geomean_speedup",
    "geomean_peak_fraction",
    "peak_problems",
    "audit",
    "audited_results",
    "judged",
    "pending",
    "flagged_results",
    "ranked",
    "submission__verified",
    "submission__reported_tokens",
    "submission__reported_dollars",
    "submission__gpu_seconds",
    "submission__feedback_runs",
    "submission__created_at",
)


def leaderboard_export(profile: HardwareProfile, filters: Filters) -> list[dict]:
    """Every listed entry matching the filters as plain dicts (one query), ranked within each protocol."""
    query = _entries(profile, filters)
    if filters.protocol:
        query = query.filter(protocol=filters.protocol)
    rows = list(query.order_by("protocol", *order_for(profile, SORTS[filters.sort])).values(*EXPORT_FIELDS))
    ranks: dict[str, int] = defaultdict(int)
    for row in rows:
        if row["ranked"]:
            ranks[row["protocol"]] += 1
        row["rank"] = ranks[row["protocol"]] if row["ranked"] else None
    return rows


# What the API's leaderboard rows show (api/serializers.py entry_row, leaderboard_rows): read as values, because
# building the five model instances of each row (entry, submission, submitter, user, profile) was most of a 500-row
# request's time.
ROW_FIELDS = (
    "ranked",
    "protocol",
    "backend",
    "attempts_k",
    "correct",
    "faster",
    "fast_1_0",
    "fast_1_5",
    "fast_2_0",
    "geomean_speedup",
    "geomean_peak_fraction",
    "peak_problems",
    "audit",
    "audited_results",
    "judged",
    "pending",
    "flagged_results",
    "submission_id",
    "submission__submitter__display_name",
    "submission__submitter__user__username",
    "submission__profile__slug",
    "submission__profile__device",
    "submission__label",
    "submission__model_name",
    "submission__agent",
    "submission__agent_version",
    "submission__backend",
    "submission__protocol",
    "submission__attempts_k",
    "submission__selection_rule",
    "submission__reported_tokens",
    "submission__reported_dollars",
    "submission__gpu_seconds",
    "submission__feedback_runs",
    "submission__visibility",
    "submission__verified",
    "submission__flagged",
    "submission__flag_reason",
    "submission__created_at",
    "submission__published_at",
)


def _window(profile: HardwareProfile, filters: Filters, offset: int, limit: int):
    """One protocol's table from ``offset`` (a queryset), and how many ranked rows come before it."""
    query = _entries(profile, filters).filter(protocol=filters.protocol)
    ranked_before = sum(query[:offset].values_list("ranked", flat=True)) if offset else 0
    return query[offset : offset + limit], ranked_before


def leaderboard_slice(profile: HardwareProfile, filters: Filters, offset: int, limit: int) -> list:
    """A window of one protocol's table, rank numbers included (ranks count the ranked rows before the window)."""
    window, before = _window(profile, filters, offset, limit)
    entries = list(window)
    for entry, rank in zip(entries, _rank_numbers([e.ranked for e in entries], before), strict=True):
        entry.rank = rank
    return entries


def leaderboard_rows(profile: HardwareProfile, filters: Filters, offset: int, limit: int) -> list[dict]:
    """leaderboard_slice as plain rows (ROW_FIELDS and ``rank``), for the API's windows of up to 500 rows."""
    window, before = _window(profile, filters, offset, limit)
    rows = list(window.values(*ROW_FIELDS))
    for row, rank in zip(rows, _rank_numbers([r["ranked"] for r in rows], before), strict=True):
        row["rank"] = rank
    return rows


def filter_choices(profile: HardwareProfile) -> dict:
    listed = LeaderboardEntry.objects.filter(profile=profile, listed=True)
    return {
        "backends": sorted(set(listed.values_list("backend", flat=True).distinct())),
        "ks": sorted(set(listed.values_list("attempts_k", flat=True).distinct())),
        "protocols": [(p, PROTOCOL_LABELS[p]) for p in PROTOCOL_ORDER],
        "sorts": list(SORTS),
    }


def heatmap(profile: HardwareProfile, protocol: str = "", limit: int = 40, per_protocol: int = 15) -> dict:
    """Submissions x problems: the top ``limit`` listed entries of the protocol, or without one the top
    ``per_protocol`` of each protocol (protocols are never ranked together, and one crowded protocol must not push
    the others off), and their 87 statuses (one query a protocol, one for the statuses)."""
    top = []
    for shown in [protocol] if protocol else PROTOCOL_ORDER:
        top += list(
            LeaderboardEntry.objects.filter(profile=profile, listed=True, protocol=shown)
            .order_by(*order_for(profile, SORTS["correct"]))
            .values_list("submission_id", "submission__model_name", "submission__agent", "protocol", "attempts_k")[
                : limit if protocol else per_protocol
            ]
        )
    ids = [row[0] for row in top]
    grid = defaultdict(dict)
    for sid, pid, status, correct, faster, speedup in ProblemScore.objects.filter(submission_id__in=ids).values_list(
        "submission_id", "problem_id", "status", "correct", "faster", "speedup"
    ):
        grid[sid][pid] = (status, correct, faster, speedup)
    return {"rows": top, "grid": grid}
