"""The plots as a browser draws them (issue 26), in headless Chromium against the embedded server: the "Search cost
vs Faster" plot and a problem's strip plot in every state (nothing published, every submission failed, one point,
thousands), read from what Plotly drew (the SVG markers, the axes' ranges in gd._fullLayout, marker boxes inside the
plotting area), not only from the JSON the page carries. Screenshots go to test-output/plots-*.png."""

from __future__ import annotations

import urllib.request

from tests.site.browser.conftest import OUTPUT

DRAWN = """(id) => {
  const gd = document.getElementById(id), fl = gd._fullLayout;
  const area = gd.querySelector('.draglayer .xy .nsewdrag').getBoundingClientRect();
  const points = Array.from(gd.querySelectorAll('.scatterlayer .points path.point'));
  const outside = points.filter(p => {
    const b = p.getBoundingClientRect();
    return b.left < area.left - 0.5 || b.right > area.right + 0.5
      || b.top < area.top - 0.5 || b.bottom > area.bottom + 0.5;
  }).length;
  return {points: points.length, outside: outside, x: fl.xaxis.range, y: fl.yaxis.range,
          xtitle: fl.xaxis.title.text, xtype: fl.xaxis.type};
}"""


def drawn(tab, plot: str) -> dict:
    tab.wait_for_selector(f"#{plot} .main-svg", timeout=30_000)
    return tab.evaluate(DRAWN, plot)


def test_search_cost_plot_in_every_state(site, page):
    url, seed = site
    # A fresh install: no published submission. A sentence, not empty axes.
    page.goto(f"{url}/")
    assert page.locator("#pareto").count() == 0
    assert "Nothing to plot yet" in page.inner_text("#pareto-empty")
    page.screenshot(path=str(OUTPUT / "plots-pareto-empty.png"), full_page=True)

    # Only runs without feedback (one-shot, best-of-k): every one would sit at zero cost, several on one spot at
    # (0, 0) under two legend entries (issue 35, defect 8). A sentence instead of a plot.
    seed("entries(make(1, 'one_shot', name='solo'), lambda i: 0)")
    seed("entries(make(2, 'best_of_k', k=2, name='bok'), lambda i: 3 + i)")
    page.goto(f"{url}/")
    assert page.locator("#pareto").count() == 0
    assert "none of the 3 published submissions on this profile has a measured search cost" in page.inner_text(
        "#pareto-empty"
    )

    # One agentic run with metered feedback: now there is a cost axis, and every point is drawn inside it.
    seed(AGENTIC_WITH_COST)
    page.goto(f"{url}/")
    got = drawn(page, "pareto")
    assert got["points"] == 4 and got["outside"] == 0, got
    assert got["x"][0] < 0 < got["x"][1] and got["y"][1] > 4, got
    assert got["xtitle"] == "measured rank-hours of feedback runs", got  # leaderboard/scoring/costs.py's CPU unit
    names = page.evaluate("Array.from(document.getElementById('pareto')._fullData).map(t => t.name)")
    assert "best-of-k (no feedback)" in names and "agentic (measured feedback cost)" in names, names
    page.locator("#pareto").screenshot(path=str(OUTPUT / "plots-pareto-one.png"))

    # Thousands: every one drawn, none outside the area, the y range covering the largest Faster.
    seed("entries(make(1500, 'one_shot', name='many'), lambda i: i % 88)")
    page.goto(f"{url}/")
    got = drawn(page, "pareto")
    assert got["points"] == 1504 and got["outside"] == 0, got
    assert got["y"][0] < 0 and got["y"][1] > 87, got
    page.locator("#pareto").screenshot(path=str(OUTPUT / "plots-pareto-many.png"))


# An agentic submission whose linked feedback session ran 3 metered runs of 20 minutes at W = 2 (2 rank-hours).
AGENTIC_WITH_COST = """
from leaderboard.feedback.models import FeedbackRun, FeedbackSession
[agent] = make(1, 'agentic_feedback', name='agent')
entries([agent], lambda i: 5)
session = FeedbackSession.objects.create(submitter=sub, profile=p, submission=agent)
for n in range(3):
    FeedbackRun.objects.create(session=session, submitter=sub, profile=p, problem_id=1, filename='a.py', code='',
                               sha256='0' * 64, world_size=2, device='cpu', trials=1, status='done',
                               verdict='correct', wall_ms=1_200_000)
"""


def test_problem_strip_plot_in_every_state(site, page):
    url, seed = site
    # No submission: the sentence as before.
    page.goto(f"{url}/problems/5/")
    assert "No published submission has a candidate" in page.inner_text("main")
    assert page.locator("#strip").count() == 0

    # Every submission failed: a sentence, the verdicts in the table, no empty Plotly axes.
    seed("scores(make(3, 'one_shot', name='fails'), 2, 'runtime_error')")
    page.goto(f"{url}/problems/2/")
    assert page.locator("#strip").count() == 0 and page.locator(".main-svg").count() == 0
    assert "No submission is correct on this problem yet" in page.inner_text("#strip-empty")
    assert page.locator("table.scores tbody tr").count() == 3
    page.screenshot(path=str(OUTPUT / "plots-strip-all-failed.png"), full_page=True)
    # Under this W = 2 profile the catalogue's W = 8 estimate does not hold: said, with no number (issue 35).
    light = page.inner_text("#light")
    assert light.startswith("No floor at W = 2: ") and "W = 8 only" in light and light.count(":") == 1, light
    # At W = 8 the speed-of-light line keeps a space between number and unit, zero included.
    page.goto(f"{url}/problems/2/?profile=gpu-h200x8")
    facts = page.inner_text("dl.facts")
    assert "FLOP" in facts and "0FLOP" not in facts and " moved and " in facts

    # One correct submission: one point, the log axis spanning its interval and 1 (the reference line).
    seed("scores(make(1, 'one_shot', name='one'), 3, 'correct', lambda i: 2.5)")
    page.goto(f"{url}/problems/3/")
    got = drawn(page, "strip")
    assert got["points"] == 1 and got["outside"] == 0 and got["xtype"] == "log", got
    assert got["x"][0] < 0 < 0.3979 < got["x"][1], got  # log10(1) = 0, log10(2.5 * 1.1)
    page.locator("#strip").screenshot(path=str(OUTPUT / "plots-strip-one.png"))

    # Thousands of correct submissions, speedups 0.2x to 8x: all drawn inside the axes.
    seed("scores(make(1200, 'one_shot', name='strip'), 4, 'correct', lambda i: 0.2 * (40 ** (i / 1199)))")
    page.goto(f"{url}/problems/4/")
    got = drawn(page, "strip")
    assert got["points"] == 1200 and got["outside"] == 0, got
    assert got["x"][0] < -0.75 and got["x"][1] > 0.95, got  # log10(0.2 * 0.9), log10(8 * 1.1)
    # The tick labels Plotly drew: 0.2-0.9 read as full numbers with their unit, never bare "2 3 ... 9" left of 1
    # (issue 35, defect 7).
    ticks = page.evaluate("Array.from(document.querySelectorAll('#strip .xtick text')).map(t => t.textContent)")
    assert "0.2x" in ticks and "0.5x" in ticks and "1x" in ticks and "5x" in ticks, ticks
    assert not any(t in ("2", "3", "4", "5", "6", "7", "8", "9") for t in ticks), ticks
    page.locator("#strip").screenshot(path=str(OUTPUT / "plots-strip-many.png"))


def test_problem_peak_fraction_plot(site, page):
    url, seed = site
    # No peak fraction (a CPU profile has no peak rates): a sentence.
    seed("scores(make(2, 'one_shot', name='nopeak'), 7, 'correct', lambda i: 1.2)")
    page.goto(f"{url}/problems/7/")
    assert page.locator("#peak").count() == 0 and page.locator("#peak-empty").count() == 1
    # Peak fractions from 0.5% to 40%, as the judge stores them: drawn on a log axis labelled in percent.
    seed(
        "subs = make(300, 'best_of_k', k=2, name='peak'); scores(subs, 8, 'correct', lambda i: 1.5); "
        "[ProblemScore.objects.filter(submission=s, problem_id=8).update(peak_fraction=0.005 * (80 ** (i / 299)), "
        "peak_fraction_lo=0.004 * (80 ** (i / 299)), peak_fraction_hi=0.006 * (80 ** (i / 299))) "
        "for i, s in enumerate(subs)]"
    )
    page.goto(f"{url}/problems/8/")
    got = drawn(page, "peak")
    assert got["points"] == 300 and got["outside"] == 0 and got["xtype"] == "log", got
    assert got["xtitle"] == "share of the speed of light reached (log)", got
    ticks = page.evaluate("Array.from(document.querySelectorAll('#peak .xtick text')).map(t => t.textContent)")
    assert "1%" in ticks and "10%" in ticks and all(t.endswith("%") for t in ticks), ticks
    page.locator("#peak").screenshot(path=str(OUTPUT / "plots-peak-fraction.png"))


def test_static_files_compressed_and_cached(site, page):
    """WhiteNoise serves the collected files: hashed names, gzip to browsers that accept it, a year's
    cache. The home page's load is printed (timings belong in benchmarks/page_load.py; only a loose bound here)."""
    url, seed = site
    seed("scores(make(1, 'one_shot', name='static'), 9, 'correct', lambda i: 1.5)")
    page.goto(f"{url}/problems/9/")  # a page that draws a plot, whatever the other tests seeded
    page.wait_for_selector("#strip .main-svg", timeout=30_000)
    page.wait_for_load_state("load")
    timing = page.evaluate("""() => {
      const nav = performance.getEntriesByType('navigation')[0];
      const res = performance.getEntriesByType('resource');
      return {load_ms: nav.loadEventEnd, bytes: [nav, ...res].reduce((s, r) => s + r.transferSize, 0),
              plotly: res.filter(r => r.name.includes('plotly'))
                         .map(r => [r.name, r.encodedBodySize, r.decodedBodySize])};
    }""")
    print(
        f"\nhome page: load event at {timing['load_ms']:.0f} ms, {timing['bytes']:,} bytes received, "
        f"plotly.js {timing['plotly']}"
    )
    [(plotly_url, sent, decoded)] = timing["plotly"]
    assert "/static/vendor/plotly.min." in plotly_url and plotly_url.endswith(".js")  # hashed name
    assert sent < decoded / 3, timing  # compressed on the wire (4.8 MB -> about 1.5 MB)
    assert timing["load_ms"] < 20_000, timing
    request = urllib.request.Request(plotly_url, headers={"Accept-Encoding": "gzip, deflate, br"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.headers["Content-Encoding"] == "gzip"
        assert "max-age=315360000" in response.headers["Cache-Control"], response.headers["Cache-Control"]
        assert "immutable" in response.headers["Cache-Control"], response.headers["Cache-Control"]
        assert len(response.read()) == sent
    css = page.evaluate("document.querySelector('link[rel=stylesheet]').href")
    assert "/static/site." in css and css != f"{url}/static/site.css"  # hashed too
