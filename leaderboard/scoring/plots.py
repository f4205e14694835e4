"""Plotly figures as plain dicts (plotly.js draws them in the page); no plotly Python objects on the request path."""
from __future__ import annotations

import json
import math

STATUS_CODE = {"missing": None, "not_judged": None, "pending": 0, "infra_error": 0, "correct": 2}
COLORSCALE = [[0.0, "#d9d9d9"], [0.25, "#d9d9d9"], [0.25, "#c0392b"], [0.5, "#c0392b"], [0.5, "#2e86c1"],
              [0.75, "#2e86c1"], [0.75, "#1e8449"], [1.0, "#1e8449"]]
LEGEND = "grey: pending or platform failure · red: not correct · blue: correct · green: correct and faster"


def heatmap_figure(data: dict, problems: list) -> dict:
    """z: 0 pending/infra, 1 wrong, 2 correct, 3 correct and faster; blank where no candidate was sent."""
    x = [p.id for p in problems]
    y, z, text = [], [], []
    for sid, model, agent, protocol, k in data["rows"]:
        cells = data["grid"].get(sid, {})
        y.append(f"#{sid} {model[:28]}")
        zrow, trow = [], []
        for pid in x:
            status, correct, faster, speedup = cells.get(pid, ("missing", False, False, None))
            zrow.append(_cell(status, correct, faster))
            trow.append(f"{status}" + (f", {speedup:.2f}x" if speedup else ""))
        z.append(zrow)
        text.append(trow)
    return {
        "data": [{"type": "heatmap", "x": x, "y": y, "z": z, "text": text, "zmin": 0, "zmax": 3,
                  "colorscale": COLORSCALE, "showscale": False, "xgap": 1, "ygap": 1,
                  "hovertemplate": "problem %{x}<br>%{y}<br>%{text}<extra></extra>"}],
        "layout": {"height": max(220, 22 * len(y) + 90), "margin": {"l": 220, "r": 10, "t": 10, "b": 40},
                   "xaxis": {"title": {"text": "problem"}, "dtick": 5},
                   "yaxis": {"autorange": "reversed", "automargin": True}},
    }


def _cell(status: str, correct: bool, faster: bool):
    if status in ("missing", "not_judged"):
        return None
    if status in ("pending", "infra_error"):
        return 0
    if correct:
        return 3 if faster else 2
    return 1


def strip_figure(points: list) -> dict | None:
    """Speedup of every correct submission on one problem, one strip per protocol, CI as error bars; None when no
    submission is correct (the page says so instead of drawing empty axes)."""
    by_protocol: dict[str, list] = {}
    for sid, model, protocol, status, speedup, lo, hi, correct, flagged in points:
        if speedup is None or speedup <= 0 or status != "correct":
            continue
        by_protocol.setdefault(protocol, []).append((sid, model, speedup, lo, hi, flagged))
    if not by_protocol:
        return None
    traces, values = [], [1.0]
    for protocol, rows in sorted(by_protocol.items()):
        for r in rows:
            values += [v for v in (r[2], r[3], r[4]) if v is not None and v > 0]
        traces.append({
            "type": "scatter", "mode": "markers", "name": protocol.replace("_", "-"), "cliponaxis": False,
            "x": [r[2] for r in rows], "y": [protocol.replace("_", "-")] * len(rows),
            "text": [f"#{r[0]} {r[1]}" + (" (flagged)" if r[5] else "") for r in rows],
            "error_x": {"type": "data", "symmetric": False,
                        "array": [max(0.0, (r[4] or r[2]) - r[2]) for r in rows],
                        "arrayminus": [max(0.0, r[2] - (r[3] or r[2])) for r in rows], "thickness": 1},
            "marker": {"size": 9, "opacity": 0.75, "symbol": ["x" if r[5] else "circle" for r in rows]},
            "hovertemplate": "%{text}<br>speedup %{x:.3f}x<extra></extra>",
        })
    # Log axis over the data, its intervals and 1 (the reference line), padded by a fifth of a decade each way.
    lo, hi = math.log10(min(values)), math.log10(max(values))
    return {
        "data": traces,
        "layout": {"height": 120 + 60 * len(traces), "margin": {"l": 140, "r": 20, "t": 10, "b": 50},
                   "xaxis": {"title": {"text": "speedup over the reference (log)"}, "type": "log",
                             "range": [lo - 0.2, hi + 0.2]},
                   "yaxis": {"type": "category"},
                   "shapes": [{"type": "line", "x0": 1, "x1": 1, "yref": "paper", "y0": 0, "y1": 1,
                               "line": {"dash": "dot", "color": "#555"}}],
                   "showlegend": False},
    }


def to_json(figure: dict) -> str:
    return json.dumps(figure, separators=(",", ":"))
