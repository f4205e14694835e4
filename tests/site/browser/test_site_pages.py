"""The browsable API page and the 404 page in headless Chromium under the site's CSP (issue 26): Swagger UI runs
from the site's own files and draws every operation of the schema; no CSP violation on either page."""
from __future__ import annotations

from tests.site.browser.test_plots import site  # noqa: F401 - fixture
from tests.site.browser.test_upload_flow import OUTPUT, page  # noqa: F401 - fixture


def test_swagger_ui_draws_the_api_under_the_csp(site, page):  # noqa: F811
    url, _ = site
    violations = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    external = []
    page.on("request", lambda r: external.append(r.url) if not r.url.startswith(url) and
            not r.url.startswith("data:") else None)
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
