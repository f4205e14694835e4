"""The browsable API page and the 404 page in headless Chromium under the site's CSP (issue 26): Swagger UI runs
from the site's own files and draws every operation of the schema; no CSP violation on either page."""

from __future__ import annotations

from tests.site.browser.conftest import OUTPUT, sign_up, watch, zipped
from tests.site.conftest import GOOD_1


def test_swagger_ui_draws_the_api_under_the_csp(site, page):
    url, _ = site
    violations = watch(page)["csp"]
    external = []
    page.on(
        "request",
        lambda r: external.append(r.url) if not r.url.startswith(url) and not r.url.startswith("data:") else None,
    )
    page.goto(f"{url}/")
    page.click("nav[aria-label=Main] >> text=API")
    page.wait_for_url(f"{url}/api/v1/docs/")
    page.wait_for_selector(".swagger-ui .opblock", timeout=30_000)
    operations = page.locator(".swagger-ui .opblock").count()
    print(f"\nSwagger UI: {operations} operations drawn")
    assert operations >= 10
    assert page.locator(".swagger-ui .opblock", has_text="/api/v1/submissions/").count() >= 1
    page.screenshot(path=str(OUTPUT / "site-api-docs.png"))
    assert violations == [] and external == [], (violations, external)

    response = page.goto(f"{url}/submissions/424242/")
    assert response.status == 404
    assert page.locator("#not-found").is_visible() and page.locator("nav[aria-label=Main]").is_visible()
    icon = page.evaluate("document.querySelector('link[rel=icon]').href")
    assert page.request.get(icon).status == 200
    page.screenshot(path=str(OUTPUT / "site-404.png"))


def test_owner_confirms_publish_withdraws_and_is_sent_to_the_earlier_upload(site, page, tmp_path):
    url, _ = site
    sign_up(page, url, "owner-26")
    path = zipped(tmp_path, {"1_allreduce_torch.py": GOOD_1})

    def upload():
        page.goto(f"{url}/submit/")
        page.set_input_files("#id_archive", str(path))
        page.fill("#id_model", "owner-model")
        page.select_option("#id_protocol", "one_shot")
        page.fill("#id_attempts", "1")
        page.select_option("#id_profile", "cpu-gloo")
        page.click("#submit-form button[type=submit]")

    upload()
    page.wait_for_url(f"{url}/submissions/*/")
    first = page.url
    # Publish without ticking the box: the browser does not send the form (the box is required).
    page.click("#publish-form button")
    assert page.url == first and "private" in page.inner_text("dl.facts")
    page.check("#publish-form input[name=confirm]")
    page.click("#publish-form button")
    page.wait_for_load_state("load")
    assert "Published" in page.inner_text(".messages")
    page.check("#withdraw-form input[name=confirm]")
    page.click("#withdraw-form button")
    page.wait_for_load_state("load")
    assert "Withdrawn" in page.inner_text(".messages") and "withdrawn by its owner" in page.inner_text("dl.facts")
    page.screenshot(path=str(OUTPUT / "site-withdrawn.png"), full_page=True)
    # The same files again: refused, with a link to the first upload.
    upload()
    page.wait_for_selector("#upload-errors")
    assert "identical" in page.inner_text("#upload-errors")
    page.screenshot(path=str(OUTPUT / "site-duplicate-refused.png"), full_page=True)
    page.click("#upload-errors a")
    page.wait_for_load_state("load")
    assert page.url == first
