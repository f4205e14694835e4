"""In headless Chromium against the embedded server (issue 25): a model name that tries to close the plots'
JSON script element and open its own is uploaded through the page's form, judged, published, and then shown as text
on every page that names it, with no script of its running; the plots still draw under the Content-Security-Policy,
and an inline script slipped into a page (a missed escape) is refused by that policy."""

from __future__ import annotations

from tests.site.browser.conftest import OUTPUT, sign_up, watch, zipped
from tests.site.conftest import GOOD_1

XSS = '</script><script>window.__xss=1;alert(1)</script><img src=x onerror="window.__xss=2">'


def test_hostile_model_name_is_text_and_no_script_runs(server, page, tmp_path):
    seen = watch(page)
    sign_up(page, server, "hostile-user")
    path = zipped(tmp_path, {"1_allreduce_torch.py": GOOD_1})
    page.goto(f"{server}/submit/")
    page.set_input_files("#id_archive", str(path))
    page.fill("#id_model", XSS)
    page.fill("#id_agent", XSS)
    page.select_option("#id_protocol", "one_shot")
    page.fill("#id_attempts", "1")
    page.select_option("#id_profile", "cpu-gloo")
    page.check("#id_publish")
    page.click("#submit-form button[type=submit]")
    page.wait_for_url(f"{server}/submissions/*/")
    submission_url = page.url
    # A locator, not wait_for_function: that one evaluates a string in the page, which the CSP forbids.
    page.locator("#live-status", has_text="Finished").wait_for(timeout=240_000)

    for url, plot in [
        (submission_url, None),
        (f"{server}/?protocol=one_shot", None),
        (f"{server}/problems/1_allreduce/", "#strip"),
        (f"{server}/problems/", "#heatmap"),
    ]:
        response = page.goto(url)
        assert "script-src 'self'" in response.headers["content-security-policy"]
        if plot:  # plotly.js and site.js ran from their files and read the figure from json_script
            page.wait_for_selector(f"{plot} .main-svg", timeout=30_000)
        page.wait_for_load_state("load")
        assert page.evaluate("window.__xss") is None, url
        assert page.locator("img[src=x]").count() == 0, url
        if plot != "#heatmap":  # the heatmap's labels cut names to 28 characters
            assert XSS in page.inner_text("main"), url
    page.goto(f"{server}/problems/1_allreduce/")
    page.wait_for_selector("#strip .main-svg", timeout=30_000)
    # The figure's data, as site.js read it from the json_script element: the name intact, as a string.
    figure = page.evaluate("JSON.parse(document.getElementById('strip-data').textContent)")
    assert any(XSS in text for trace in figure["data"] for text in trace["text"])
    page.screenshot(path=str(OUTPUT / "site-hostile-name.png"), full_page=True)
    assert seen["dialogs"] == []
    assert seen["csp"] == []  # the site's own pages need no inline script


def test_an_inline_script_slipped_into_a_page_is_refused_by_the_policy(server, page):
    """What the CSP is for: were some value ever printed unescaped, its script would still not run."""
    seen = watch(page)

    def inject(route):
        response = route.fetch()
        body = response.text().replace("</main>", "<script>window.__xss=3;alert(3)</script></main>")
        route.fulfill(response=response, body=body)

    page.route(f"{server}/problems/", inject)
    page.goto(f"{server}/problems/")
    page.wait_for_load_state("load")
    assert "window.__xss=3" in page.content()  # the script is in the page...
    assert page.evaluate("window.__xss") is None  # ...and did not run
    assert seen["dialogs"] == []
    assert any("inline script" in text for text in seen["csp"]), seen["csp"]
