"""In headless Chromium, against the embedded server (`manage.py runserver_with_worker`: SQLite, dramatiq's StubBroker,
an in-process worker, the real judge): sign up, upload a submission, watch it finish live, read Correct and Faster
on the leaderboard. Screenshots go to test-output/."""

from __future__ import annotations

from pathlib import Path

from tests.site.browser.conftest import OUTPUT, sign_up, zipped
from tests.site.conftest import GOOD_1, WRONG_1


def archive(tmp_path: Path) -> Path:
    return zipped(
        tmp_path,
        {"attempt_1/1_allreduce_torch.py": WRONG_1, "attempt_2/1_allreduce_torch.py": GOOD_1},
        "my-agent-run.zip",
    )


def test_upload_watch_and_read_the_leaderboard(server, page, tmp_path):
    sign_up(page, server, "browser-user")

    page.goto(f"{server}/submit/")
    page.set_input_files("#id_archive", str(archive(tmp_path)))
    page.fill("#id_model", "browser-model")
    page.fill("#id_agent", "playwright-harness")
    page.select_option("#id_protocol", "best_of_k")
    page.fill("#id_attempts", "2")
    page.select_option("#id_profile", "cpu-gloo")
    page.check("#id_publish")
    page.click("#submit-form button[type=submit]")
    page.wait_for_url(f"{server}/submissions/*/")
    submission_url = page.url
    assert "2 evaluation(s) queued" in page.content()

    # The live status region updates by itself and the page reloads once everything is judged.
    # A locator, not wait_for_function: that one evaluates a string in the page, which the CSP forbids.
    page.locator("#live-status", has_text="Finished").wait_for(timeout=240_000)
    page.screenshot(path=str(OUTPUT / "site-submission.png"), full_page=True)
    assert page.inner_text("#live-correct") == "1"
    assert "incorrect" in page.inner_text("table.grid") and "correct" in page.inner_text("table.grid")

    page.goto(f"{server}/?protocol=best_of_k")
    row = page.locator("table.board tbody tr", has_text="browser-model")
    assert row.count() == 1
    correct = row.locator("td.correct-col").inner_text()
    faster = row.locator("td.faster-col").inner_text()
    headers = page.locator("table.board thead th").all_inner_texts()
    assert "Correct (of 87)" in " ".join(headers) and "Faster (of 87)" in " ".join(headers)
    assert correct == "1"
    assert faster in ("0", "1")  # CPU wall-clock timing decides; the column is there and numeric
    page.screenshot(path=str(OUTPUT / "site-leaderboard.png"), full_page=True)

    page.goto(f"{server}/problems/1_allreduce/")
    page.wait_for_selector("#strip .main-svg", timeout=30_000)  # Plotly drew the strip plot
    assert "browser-model" in page.inner_text("table.scores")
    page.goto(submission_url)
    assert page.locator("a", has_text="code").count() == 2  # published: code is public
