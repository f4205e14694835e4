"""The leaderboard's Pareto plot: Faster (Correct on an unranked profile) against the measured cost of the feedback
a submission's linked sessions gave (its cost axis: the feedback app's meters, in leaderboard/scoring/costs.py's
unit of the profile)."""

from __future__ import annotations

from leaderboard.feedback import selectors as feedback_selectors
from leaderboard.scoring import costs
from leaderboard.scoring.models import LeaderboardEntry
from leaderboard.submissions.uploads.metadata import AGENTIC


def pareto(profile, filters=None) -> dict:
    """Points of the Pareto plot: every listed submission. x: the measured cost of the feedback its linked sessions
    gave, in leaderboard/scoring/costs.py's unit of the profile (GPU-hours on a GPU profile, rank-hours = W x wall on a
    CPU one); one-shot and best-of-k runs got no feedback and sit at x = 0. y: Faster. Agentic submissions without a
    linked session have no measured cost and are counted, not plotted. The leaderboard's filters apply."""
    query = LeaderboardEntry.objects.filter(profile=profile, listed=True)
    if filters is not None and filters.protocol:
        query = query.filter(protocol=filters.protocol)
    if filters is not None and filters.backend:
        query = query.filter(backend=filters.backend)
    if filters is not None and filters.k is not None:
        query = query.filter(attempts_k=filters.k)
    entries = list(
        query.values_list(
            "submission_id", "protocol", "faster", "correct", "submission__model_name", "submission__feedback_runs"
        )
    )
    measured = feedback_selectors.measured_cost([sid for sid, protocol, *_ in entries if protocol == AGENTIC])
    unit = costs.unit(profile.device)
    points, unmetered = [], 0
    for sid, protocol, faster, correct, model, feedback_runs in entries:
        hours = 0.0
        if protocol == AGENTIC:
            cost = measured.get(sid)
            if cost is None:
                unmetered += 1
                continue
            hours = cost["device_seconds"] / 3600  # W x wall: GPU-seconds on a GPU profile, rank-seconds on CPU
        points.append(
            {
                "id": sid,
                "model": model,
                "protocol": protocol,
                "faster": faster,
                "correct": correct,
                "y": faster if profile.ranked else correct,
                "hours": hours,
                "runs": feedback_runs if protocol == AGENTIC else 0,
            }
        )
    # y: Faster where speed ranks; on an unranked profile Faster is never counted (always 0), so Correct.
    return {
        "points": points,
        "unmetered": unmetered,
        "gpu": profile.device == "cuda",
        "unit": unit,
        "axis": f"measured {unit.replace('seconds', 'hours')} of feedback runs",
        "y_axis": "Faster (of 87)" if profile.ranked else "Correct (of 87; this profile never ranks speed)",
    }


def frontier(points: list[dict]) -> list[dict]:
    """The points no other point beats on both axes (less cost and at least as high on y: Faster, or Correct on
    an unranked profile), by cost."""
    best, out = -1, []
    for p in sorted(points, key=lambda p: (p["hours"], -p["y"])):
        if p["y"] > best:
            out.append(p)
            best = p["y"]
    return out
