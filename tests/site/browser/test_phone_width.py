"""The site at phone width (390 px) in Chromium, each page loaded once: no page wider than the viewport
(document.scrollingElement.scrollWidth <= 390), the nav on one line or behind a menu, the leaderboard's key columns
(Correct, Faster, peak) visible or the table scrollable with a hint, the heatmap inside the viewport, the feedback run
page's long lines inside their own scrolling box. Screenshots of each page at phone and desktop width in
test-output/phone-*.png and test-output/desktop-*.png."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.site.browser.conftest import OUTPUT, PASSWORD, ROOT, embedded_site

PHONE = 390
SEED = f"""
import json
from django.contrib.auth import get_user_model
from leaderboard.accounts.services import submitter_for
from leaderboard.catalogue.models import HardwareProfile
from leaderboard.feedback.models import FeedbackRun, FeedbackSession
from leaderboard.scoring.models import LeaderboardEntry, ProblemScore
from leaderboard.submissions.models import Candidate, Submission
cpu = HardwareProfile.objects.get(slug="cpu-gloo")
user = get_user_model().objects.create_user(username="phone-lab", password="{PASSWORD}")
sub = submitter_for(user)
made = []
for i, protocol in enumerate(["one_shot", "best_of_k", "agentic_feedback"] * 2):
    s = Submission.objects.create(submitter=sub, profile=cpu, model_name=f"a-rather-long-model-name-{{i}}-2026-preview",
                                  agent="harness-with-a-long-name", backend="torch", protocol=protocol,
                                  attempts_k=1 if protocol == "one_shot" else 4, visibility="public",
                                  label="a label that goes on for a while")
    LeaderboardEntry.objects.create(submission=s, profile=cpu, protocol=protocol, backend="torch",
                                    attempts_k=s.attempts_k, listed=True, ranked=False, correct=40 - i, faster=0,
                                    judged=87)
    for pid in range(1, 40):
        ProblemScore.objects.create(submission=s, problem_id=pid, profile=cpu, protocol=protocol, listed=True,
                                    status="correct" if pid % 3 else "incorrect", attempt=1, attempts_total=1,
                                    correct=bool(pid % 3), speedup=1.02, speedup_lo=0.8, speedup_hi=1.3)
    made.append(s)
code = "import torch\\n\\ndef solution(x):\\n    return x  # " + "a very long comment " * 30 + "\\n"
candidate = Candidate.objects.create(submission=made[0], problem_id=1, attempt=1, filename="1_allreduce_torch.py",
                                     backend="torch", code=code, sha256="0" * 64, size=len(code))
session = FeedbackSession.objects.create(submitter=sub, profile=cpu)
run = FeedbackRun.objects.create(session=session, submitter=sub, profile=cpu, problem_id=1,
                                 filename="1_allreduce_torch.py", code=code, sha256="0" * 64, world_size=2,
                                 device="cpu", trials=1, status="done", verdict="incorrect", wall_ms=1200,
                                 feedback={{"verdict": "incorrect", "message": "trial 0, rank 1: " + "x" * 400}})
print(json.dumps({{"submission": made[0].pk, "candidate": candidate.pk, "run": run.pk}}))
"""


def seed(env) -> dict:
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", SEED],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_page_fits_a_phone(tmp_path_factory, migrated_database):
    from playwright.sync_api import sync_playwright

    from tests.site.browser.conftest import ARGS, CHROMIUM

    OUTPUT.mkdir(exist_ok=True)
    with embedded_site(tmp_path_factory.mktemp("phone"), migrated_database) as (url, env), sync_playwright() as p:
        ids = seed(env)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        phone = browser.new_page(viewport={"width": PHONE, "height": 844}, is_mobile=True, has_touch=True)
        desktop = browser.new_page(viewport={"width": 1280, "height": 900})
        for tab in (phone, desktop):
            tab.goto(f"{url}/accounts/login/")
            tab.fill("#id_username", "phone-lab")
            tab.fill("#id_password", PASSWORD)
            tab.click("form.stack button")
            tab.wait_for_url(f"{url}/account/")
        pages = {
            "leaderboard": "/leaderboard/cpu-gloo/",
            "problems": "/problems/?profile=cpu-gloo",
            "problem": "/problems/1_allreduce/?profile=cpu-gloo",
            "submission": f"/submissions/{ids['submission']}/",
            "code": f"/candidates/{ids['candidate']}/",
            "feedback-run": f"/feedback/runs/{ids['run']}/",
            "account": "/account/",
            "submit": "/submit/",
            "getting-started": "/getting-started/",
            "metadata": f"/submissions/{ids['submission']}/metadata",
        }
        too_wide = {}
        for name, path in pages.items():
            desktop.goto(url + path)
            desktop.screenshot(path=str(OUTPUT / f"desktop-{name}.png"), full_page=True)
            response = phone.goto(url + path)
            assert response.status == 200, (name, response.status)
            phone.wait_for_load_state("load")
            if name == "problems":
                phone.wait_for_selector("#heatmap .main-svg", timeout=30_000)
            width = phone.evaluate("document.scrollingElement.scrollWidth")
            if width > PHONE:
                too_wide[name] = width
            phone.screenshot(path=str(OUTPUT / f"phone-{name}.png"), full_page=True)
            if name == "leaderboard":
                # The nav: one line, or a menu.
                nav = phone.locator("nav[aria-label=Main]")
                menu = phone.locator("nav[aria-label=Main] details.menu summary")
                assert nav.bounding_box()["height"] < 60 or menu.is_visible()
                # Correct, Faster (or its stand-in on an unranked profile) and peak: in the viewport, or the table
                # scrolls in its own box and says so.
                table = phone.locator("table.board").first
                correct = table.locator("thead th", has_text="Correct").first.bounding_box()
                hint = phone.locator(".scroll-hint").first
                assert correct["x"] + correct["width"] <= PHONE or hint.is_visible()
            if name == "problems":
                box = phone.locator("#heatmap").bounding_box()
                assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE
        browser.close()
    assert too_wide == {}, f"wider than {PHONE} px at phone width: {too_wide}"
