"""The problem pages: the 87-problem list with its heatmap, a problem's page (its scores, plots, what each profile
judges it at, its speed-of-light line) and its reference offered as a starting candidate."""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import content_disposition_header

from leaderboard.catalogue import selectors as catalogue_selectors
from leaderboard.pages import tables
from leaderboard.scoring import export, plots
from leaderboard.scoring import problem_selectors as scoring_problems
from leaderboard.scoring import selectors as scoring_selectors


def problems_index(request):
    profile = catalogue_selectors.profile_get(request.GET.get("profile"))
    protocol = scoring_selectors.Filters.from_query(request.GET).protocol
    problems = scoring_problems.problems_index(profile, protocol)
    fmt = export.wanted(request)
    if fmt:
        columns, rows = export.problems_table(problems)
        return export.table_response(fmt, f"problems-{profile.slug}", columns, rows)
    heat = scoring_selectors.heatmap(profile, protocol)
    table = tables.problem_table(problems, request.GET)  # search, category, sort (leaderboard/pages/tables.py)
    return render(
        request,
        "leaderboard/problems.html",
        {
            "profile": profile,
            "profiles": catalogue_selectors.profiles(),
            "problems": table.rows,
            "table": table,
            "protocol": protocol,
            "protocols": scoring_selectors.PROTOCOL_LABELS.items(),
            "heatmap_rows": len(heat["rows"]),
            "heatmap": plots.heatmap_figure(heat, problems, profile.ranked),
            "heatmap_legend": plots.LEGEND,
        },
    )


def problem_detail(request, key):
    problem = catalogue_selectors.problem_get(key)
    if key != problem.stem:
        return redirect(
            reverse("problem", args=[problem.stem]) + (f"?{request.GET.urlencode()}" if request.GET else "")
        )
    profile = catalogue_selectors.profile_get(request.GET.get("profile"))
    filters = scoring_selectors.Filters.from_query(request.GET)
    data = scoring_problems.problem_scores(problem, profile, filters.protocol, filters.page)
    fmt = export.wanted(request)
    if fmt:
        columns, rows = export.problem_scores_table(data["points"])
        return export.table_response(fmt, f"problem-{problem.stem}-{profile.slug}", columns, rows)
    return render(
        request,
        "leaderboard/problem.html",
        {
            "problem": problem,
            "profile": profile,
            "profiles": catalogue_selectors.profiles(),
            "data": data,
            "protocol": filters.protocol,
            "protocols": scoring_selectors.PROTOCOL_LABELS.items(),
            "strip": plots.strip_figure(data["points"]),
            "peak": plots.peak_figure(data["points"]),
            "light": _light_at(problem, profile),
            "judged_at": _judged_at(catalogue_selectors.profiles()),
            "peak_notes": sorted({row["peak_note"] for row in data["rows"] if row["peak_note"]})[:3],
        },
    )


def _judged_at(profiles) -> list[dict]:
    """What each profile judges a candidate at: the judge's default shape and dtype (evaluator/contract/requests.py),
    the reduced CPU shapes where the runner asks for them (jobs/judge_requests.reduced_for), W, and the hidden checks
    of a rankable run (jobs/runner.hidden_checks_apply)."""
    from dataclasses import fields

    from evaluator.contract.schema import JudgeRequest
    from leaderboard.jobs import judge_requests, runner

    defaults = {f.name: f.default for f in fields(JudgeRequest) if f.name in ("M", "N", "dtype")}
    return [
        dict(defaults, profile=p, reduced=judge_requests.reduced_for(p), hidden=runner.hidden_checks_apply(p))
        for p in profiles
    ]


def _light_at(problem, profile) -> dict:
    """The speed-of-light estimate at the profile's W, and whether it holds there: the catalogue's estimates hold
    at M = N = 1024, W = 8 only, so under a W = 2 profile there is none (never W = 8's number shown as if it
    applied)."""
    light = problem.light.get(str(profile.world_size)) if isinstance(problem.light, dict) else None
    if not isinstance(light, dict):
        return {"holds": False, "reason": f"the problem has no estimate at W = {profile.world_size}"}
    if light.get("at_defaults_only") and profile.world_size != 8:
        return {
            "holds": False,
            "reason": "the problem has no speed-of-light formula, and the catalogue's estimate holds "
            f"at M = N = 1024, W = 8 only, not at this profile's W = "
            f"{profile.world_size}",
            **light,
        }
    return {"holds": True, **light}


def problem_reference(request, key):
    """The problem's reference as a starting candidate: a PKB-named file (``<stem>_torch.py``) that ``pkb eval``
    and the upload take as it is (it reads as correct, at a speedup near 1)."""
    problem = catalogue_selectors.problem_get(key)
    if not problem.reference_source:
        raise Http404("this problem is not implemented yet")
    name = f"{problem.stem}_torch.py"
    header = (
        f"# Starting candidate for problem {problem.id} ({problem.stem}): its reference, as pkb-arena judges it.\n"
        f"# Keep the file name {name}; check it with: pkb eval {problem.id} {name} --world-size 2 --device cpu\n"
    )
    response = HttpResponse(header + problem.reference_source, content_type="text/x-python; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(True, name)
    return response
