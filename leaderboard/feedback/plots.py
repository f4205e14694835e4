"""The Pareto plot of the leaderboard page as a plain Plotly dict (drawn by plotly.js in the page)."""
from __future__ import annotations

import json

COLORS = {"agentic_feedback": "#7d3c98", "one_shot": "#2e86c1"}
LABELS = {"agentic_feedback": "agentic (measured feedback cost)", "one_shot": "one-shot (no feedback)"}


def pareto_figure(data: dict, frontier: list[dict]) -> dict:
    traces = []
    for protocol in ("one_shot", "agentic_feedback"):
        points = [p for p in data["points"] if p["protocol"] == protocol]
        if not points:
            continue
        traces.append({
            "type": "scatter", "mode": "markers", "name": LABELS[protocol],
            "x": [p["hours"] for p in points], "y": [p["faster"] for p in points],
            "text": [f"#{p['id']} {p['model'][:40]} · {p['runs']} feedback runs · correct {p['correct']}"
                     for p in points],
            "marker": {"size": 10, "opacity": 0.8, "color": COLORS[protocol]},
            "hovertemplate": "%{text}<br>%{x:.3g} h, faster %{y}<extra></extra>",
        })
    if len(frontier) > 1:
        traces.append({"type": "scatter", "mode": "lines", "name": "Pareto frontier", "line": {"shape": "hv",
                       "dash": "dot", "color": "#555"}, "x": [p["hours"] for p in frontier],
                       "y": [p["faster"] for p in frontier], "hoverinfo": "skip"})
    return {
        "data": traces,
        "layout": {"height": 320, "margin": {"l": 60, "r": 10, "t": 10, "b": 50},
                   "xaxis": {"title": {"text": data["axis"]}, "rangemode": "tozero"},
                   "yaxis": {"title": {"text": "Faster (of 87)"}, "rangemode": "tozero"},
                   "legend": {"orientation": "h", "y": -0.25}},
    }


def to_json(figure: dict) -> str:
    return json.dumps(figure, separators=(",", ":")).replace("</", "<\\/")
