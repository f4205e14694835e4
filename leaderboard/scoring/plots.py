"""Plotly figures as plain dicts (plotly.js draws them in the page); no plotly Python objects on the request path."""

from __future__ import annotations

import json
import math

STATUS_CODE = {"missing": None, "not_judged": None, "pending": 0, "infra_error": 0, "correct": 2}
COLORSCALE = [
    [0.0, "#d9d9d9"],
    [0.25, "#d9d9d9"],
    [0.25, "#c0392b"],
    [0.5, "#c0392b"],
    [0.5, "#2e86c1"],
    [0.75, "#2e86c1"],
    [0.75, "#1e8449"],
    [1.0, "#1e8449"],
]
LEGEND = "grey: pending or platform failure · red: not correct · blue: correct · green: correct and faster"


def heatmap_figure(data: dict, problems: list, ranked: bool = True) -> dict:
    """z: 0 pending/infra, 1 wrong, 2 correct, 3 correct and faster; blank where no candidate was sent. A cell's
    hover names its speedup on a ranked profile only (on an unranked one a point speedup without its interval is
    noise: the problem page shows it with its interval)."""
    x = [p.id for p in problems]
    y, z, text = [], [], []
    for sid, model, _agent, _protocol, _k in data["rows"]:
        cells = data["grid"].get(sid, {})
        y.append(f"#{sid} {model[:28]}")
        zrow, trow = [], []
        for pid in x:
            status, correct, faster, speedup = cells.get(pid, ("missing", False, False, None))
            zrow.append(_cell(status, correct, faster))
            trow.append(f"{status}" + (f", {speedup:.2f}x" if speedup and ranked else ""))
        z.append(zrow)
        text.append(trow)
    return {
        "data": [
            {
                "type": "heatmap",
                "x": x,
                "y": y,
                "z": z,
                "text": text,
                "zmin": 0,
                "zmax": 3,
                "colorscale": COLORSCALE,
                "showscale": False,
                "xgap": 1,
                "ygap": 1,
                "hovertemplate": "problem %{x}<br>%{y}<br>%{text}<extra></extra>",
            }
        ],
        "layout": {
            "height": max(220, 22 * len(y) + 90),
            "margin": {"l": 220, "r": 10, "t": 10, "b": 40},
            "xaxis": {"title": {"text": "problem"}, "dtick": 5},
            "yaxis": {"autorange": "reversed", "automargin": True},
        },
    }


def _cell(status: str, correct: bool, faster: bool):
    if status in ("missing", "not_judged"):
        return None
    if status in ("pending", "infra_error"):
        return 0
    if correct:
        return 3 if faster else 2
    return 1


def log_ticks(lo: float, hi: float, unit=lambda v: f"{v:g}x") -> tuple[list[float], list[str]]:
    """Tick values on a 1-2-5 ladder across [lo, hi] (decimal exponents) with full labels: plotly's own log ticks
    label 0.2-0.9 as bare "2 3 ... 9" left of 1, which reads as 2x-9x."""
    values = []
    for exponent in range(math.floor(lo) - 1, math.ceil(hi) + 1):
        for mantissa in (1, 2, 5):
            v = mantissa * 10**exponent
            if lo <= math.log10(v) <= hi:
                values.append(float(f"{v:.12g}"))
    if len(values) < 2:  # a narrow range: its ends
        values = [float(f"{10**lo:.2g}"), float(f"{10**hi:.2g}")]
    return values, [unit(v) for v in values]


GOLDEN = (5**0.5 - 1) / 2


def lanes(count: int, width: float = 0.6) -> list[float]:
    """Vertical offsets of a strip's ``count`` points (sorted by value) within ``width`` around the strip's line:
    each point and its whisker on a lane of its own, so overlapping intervals can be told apart. The golden-ratio
    sequence puts neighbours in value far apart in height (evenly spaced lanes drew a sorted strip as a diagonal)."""
    if count <= 1:
        return [0.0]
    return [round(((i * GOLDEN) % 1 - 0.5) * width, 4) for i in range(count)]


def _strips(
    rows_by_protocol: dict,
    value_text: str,
    log_range: tuple[float, float],
    axis_title: str,
    unit,
    reference_line: float | None,
    interval_text: str = "",
) -> dict:
    """One strip per protocol (a numeric y: the strip's index, each point on its own lane), the interval as a
    whisker and, on hover, as numbers (``interval_text`` formats customdata [lo, hi])."""
    traces, names = [], []
    for index, (protocol, rows) in enumerate(sorted(rows_by_protocol.items())):
        rows = sorted(rows, key=lambda r: r[2])
        names.append(protocol.replace("_", "-"))
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": names[-1],
                "cliponaxis": False,
                "x": [r[2] for r in rows],
                "y": [index + offset for offset in lanes(len(rows))],
                "text": [f"#{r[0]} {r[1]}" + (" (flagged)" if r[5] else "") for r in rows],
                "customdata": [[r[3] if r[3] is not None else r[2], r[4] if r[4] is not None else r[2]] for r in rows],
                "error_x": {
                    "type": "data",
                    "symmetric": False,
                    "array": [max(0.0, (r[4] or r[2]) - r[2]) for r in rows],
                    "arrayminus": [max(0.0, r[2] - (r[3] or r[2])) for r in rows],
                    "thickness": 1.5,
                    "width": 3,
                },
                "marker": {"size": 8, "opacity": 0.8, "symbol": ["x" if r[5] else "circle" for r in rows]},
                "hovertemplate": "%{text}<br>"
                + value_text
                + (", interval " + interval_text if interval_text else "")
                + "<extra></extra>",
            }
        )
    lo, hi = log_range
    tickvals, ticktext = log_ticks(lo, hi, unit)
    tallest = max((len(t["x"]) for t in traces), default=1)
    layout = {
        "height": 120 + max(60, min(16 * tallest, 400)) * len(traces),
        "margin": {"l": 140, "r": 20, "t": 10, "b": 50},
        "xaxis": {
            "title": {"text": axis_title},
            "type": "log",
            "range": [lo, hi],
            "tickvals": tickvals,
            "ticktext": ticktext,
        },
        "yaxis": {
            "tickvals": list(range(len(names))),
            "ticktext": names,
            "range": [-0.5, len(names) - 0.5],
            "zeroline": False,
            "showgrid": False,
        },
        "showlegend": False,
    }
    if reference_line is not None:
        layout["shapes"] = [
            {
                "type": "line",
                "x0": reference_line,
                "x1": reference_line,
                "yref": "paper",
                "y0": 0,
                "y1": 1,
                "line": {"dash": "dot", "color": "#555"},
            }
        ]
    return {"data": traces, "layout": layout}


def _padded_log_range(values: list[float]) -> tuple[float, float]:
    """The data, its intervals (and any reference value given) on a log axis, padded a fifth of a decade each way."""
    return math.log10(min(values)) - 0.2, math.log10(max(values)) + 0.2


def strip_figure(points: list) -> dict | None:
    """Speedup of every correct submission on one problem, one strip per protocol, CI as error bars; None when no
    submission is correct (the page says so instead of drawing empty axes)."""
    by_protocol: dict[str, list] = {}
    values = [1.0]  # the reference line is always in view
    for sid, model, protocol, status, speedup, lo, hi, _correct, flagged, *_ in points:
        if speedup is None or speedup <= 0 or status != "correct":
            continue
        by_protocol.setdefault(protocol, []).append((sid, model, speedup, lo, hi, flagged))
        values += [v for v in (speedup, lo, hi) if v is not None and v > 0]
    if not by_protocol:
        return None
    return _strips(
        by_protocol,
        "speedup %{x:.3f}x",
        _padded_log_range(values),
        "speedup over the reference (log)",
        lambda v: f"{v:g}x",
        1.0,
        "[%{customdata[0]:.3f}x, %{customdata[1]:.3f}x]",
    )


def peak_figure(points: list) -> dict | None:
    """Peak fraction (share of the hardware's speed of light) of every correct, unflagged submission with one, one
    strip per protocol, its interval as error bars; None when no result has one (the page says why)."""
    by_protocol: dict[str, list] = {}
    values = []
    for sid, model, protocol, _status, _s, _lo, _hi, correct, flagged, peak, peak_lo, peak_hi, *_ in points:
        if peak is None or peak <= 0 or not correct or flagged:
            continue
        by_protocol.setdefault(protocol, []).append((sid, model, peak, peak_lo, peak_hi, False))
        values += [v for v in (peak, peak_lo, peak_hi) if v is not None and v > 0]
    if not by_protocol:
        return None
    return _strips(
        by_protocol,
        "peak fraction %{x:.2%}",
        _padded_log_range(values),
        "share of the speed of light reached (log)",
        lambda v: f"{v * 100:g}%",
        None,
        "[%{customdata[0]:.2%}, %{customdata[1]:.2%}]",
    )


def to_json(figure: dict) -> str:
    return json.dumps(figure, separators=(",", ":"))
