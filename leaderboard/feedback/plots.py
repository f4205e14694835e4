"""The Pareto plot of the leaderboard page as a plain Plotly dict (drawn by plotly.js in the page)."""

from __future__ import annotations

import json

COLORS = {"one_shot": "#2e86c1", "best_of_k": "#1e8449", "agentic_feedback": "#7d3c98"}
LABELS = {
    "one_shot": "one-shot (no feedback)",
    "best_of_k": "best-of-k (no feedback)",
    "agentic_feedback": "agentic (measured feedback cost)",
}
SYMBOLS = {"one_shot": "circle", "best_of_k": "diamond", "agentic_feedback": "square"}


def pareto_figure(data: dict, frontier: list[dict]) -> dict:
    """Axes fixed from the data with a margin, so markers at x = 0 or y = 0 are drawn whole (autorange with
    rangemode 'tozero' put them on the axis line, half clipped, and a lone point at (0, 0) in a corner)."""
    traces = []
    for protocol in ("one_shot", "best_of_k", "agentic_feedback"):
        points = [p for p in data["points"] if p["protocol"] == protocol]
        if not points:
            continue
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": LABELS[protocol],
                "cliponaxis": False,
                "x": [p["hours"] for p in points],
                "y": [p["y"] for p in points],
                "text": [
                    f"#{p['id']} {p['model'][:40]} · {p['runs']} feedback runs · correct {p['correct']}" for p in points
                ],
                "marker": {
                    "size": 10,
                    "opacity": 0.75,
                    "color": COLORS[protocol],
                    "symbol": SYMBOLS[protocol],
                    "line": {"width": 1, "color": "#fff"},
                },
                "hovertemplate": "%{text}<br>%{x:.3g} h, "
                + data["y_axis"].split(" (")[0].lower()
                + " %{y}<extra></extra>",
            }
        )
    if len(frontier) > 1:
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "Pareto frontier",
                "line": {"shape": "hv", "dash": "dot", "color": "#555"},
                "x": [p["hours"] for p in frontier],
                "y": [p["y"] for p in frontier],
                "hoverinfo": "skip",
            }
        )
    xmax = max([p["hours"] for p in data["points"]] + [0.0]) or 1.0
    ymax = max([p["y"] for p in data["points"]] + [4])
    ypad = max(0.6, 0.06 * ymax)  # at least a marker's radius at the plot's height
    return {
        "data": traces,
        "layout": {
            "height": 340,
            "margin": {"l": 60, "r": 20, "t": 10, "b": 50},
            "xaxis": {"title": {"text": data["axis"]}, "range": [-0.06 * xmax, 1.06 * xmax], "zeroline": True},
            "yaxis": {
                "title": {"text": data["y_axis"]},
                "range": [-ypad, ymax + ypad],
                "tickformat": "d",
                "zeroline": True,
            },
            "legend": {"orientation": "h", "y": -0.25},
        },
    }


def to_json(figure: dict) -> str:
    return json.dumps(figure, separators=(",", ":")).replace("</", "<\\/")
