"""Issue 35 in Chromium: the leaderboard's peak-fraction column, a transcript page (steps collapsible, a metered
feedback run in place), an audited result's badge, the getting-started page. Read from what the browser shows, and
screenshots in test-output/issue35-*.png."""

from __future__ import annotations

import json

from tests.site.browser.conftest import OUTPUT, watch

SEED = """
import json
from django.contrib.auth import get_user_model
from leaderboard.accounts.services import submitter_for
from leaderboard.catalogue.models import HardwareProfile
from leaderboard.feedback.models import FeedbackRun, FeedbackSession
from leaderboard.scoring.models import Audit, LeaderboardEntry, ProblemScore
from leaderboard.submissions.models import Submission, Transcript
gpu = HardwareProfile.objects.get(slug="gpu-h200x8")
staff, _ = get_user_model().objects.get_or_create(username="auditor", defaults={"is_staff": True})
sub = submitter_for(get_user_model().objects.get_or_create(username="lab")[0])
rows = [("agent-opus", "agentic_feedback", 41, 12, 1.31, 0.184, 38), ("agent-small", "agentic_feedback", 30, 6, 1.08,
        0.071, 27), ("bok-model", "best_of_k", 35, 9, 1.22, 0.133, 33), ("oneshot-model", "one_shot", 20, 2, 0.93,
        0.041, 18)]
made = {}
for name, protocol, correct, faster, geo, peak, n in rows:
    s = Submission.objects.create(submitter=sub, profile=gpu, model_name=name, agent="harness", backend="cuda",
                                  protocol=protocol, attempts_k=4 if protocol == "best_of_k" else 1,
                                  visibility="public")
    LeaderboardEntry.objects.create(submission=s, profile=gpu, protocol=protocol, backend="cuda",
                                    attempts_k=s.attempts_k, listed=True, ranked=True, correct=correct,
                                    faster=faster, fast_1_0=faster / 87, geomean_speedup=geo,
                                    geomean_peak_fraction=peak, peak_problems=n, judged=87)
    ProblemScore.objects.create(submission=s, problem_id=1, profile=gpu, protocol=protocol, listed=True,
                                status="correct", attempt=1, attempts_total=1, correct=True, faster=geo > 1.1,
                                speedup=geo, speedup_lo=geo * 0.95, speedup_hi=geo * 1.05, peak_fraction=peak,
                                peak_fraction_lo=peak * 0.9, peak_fraction_hi=peak * 1.1)
    made[name] = s
hacked = made["agent-small"]
Audit.objects.create(submission=hacked, problem_id=1, verdict="reward_hack", auditor=staff,
                     note="returns the output of the first timed call for every later call")
ProblemScore.objects.filter(submission=hacked, problem_id=1).update(audit="reward_hack", flagged=True, correct=False,
                                                                    faster=False)
LeaderboardEntry.objects.filter(submission=hacked).update(audited_results=1)
agent = made["agent-opus"]
session = FeedbackSession.objects.create(submitter=sub, profile=gpu, submission=agent)
run = FeedbackRun.objects.create(session=session, submitter=sub, profile=gpu, problem_id=1, filename="a.py", code="",
                                 sha256="0" * 64, world_size=8, device="cuda", trials=5, status="done",
                                 verdict="incorrect", wall_ms=9400)
steps = [
 {"role": "system", "content": "You write multi-GPU kernels for ParallelKernelBench problems."},
 {"role": "user", "content": "Problem 1_allreduce: make it faster than torch.distributed.all_reduce."},
 {"role": "assistant", "content": "I will try a one-shot all-reduce through symmetric memory.",
  "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "pkb_feedback",
                  "arguments": json.dumps({"problem": 1, "file": "1_allreduce_cuda.py"})}}]},
 {"role": "tool", "tool_call_id": "call_1",
  "content": f"feedback run {run.pk}: incorrect\\ntrial 0, rank 3: 1,024 elements outside tolerance (max error 0.5)"},
 {"role": "assistant", "content": [
     {"type": "text", "text": "Rank 3 reads its neighbour's buffer too early; add a barrier."},
     {"type": "tool_use", "id": "tu_2", "name": "edit_file",
      "input": {"path": "1_allreduce_cuda.py", "line": 42, "insert": "barrier()"}}]},
 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_2", "content": "ok"}]},
]
text = "\\n".join(json.dumps(s) for s in steps) + "\\n"
t = Transcript.objects.create(submission=agent, problem_id=1, attempt=None, filename="transcripts/1_allreduce.jsonl",
                              content=text, steps=len(steps), sha256="0" * 64, size=len(text))
print(json.dumps({"transcript": t.pk, "hacked": hacked.pk, "run": run.pk}))
"""


def _seed(env) -> dict:
    import subprocess
    import sys

    from tests.site.browser.conftest import ROOT

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


def test_issue_35_pages_in_chromium(tmp_path_factory, migrated_database, page):
    from tests.site.browser.conftest import embedded_site

    with embedded_site(tmp_path_factory.mktemp("issue35"), migrated_database) as (url, env):
        ids = _seed(env)
        seen = watch(page)

        # The leaderboard: a Peak fraction column beside Correct and Faster, values as a browser shows them.
        page.goto(f"{url}/leaderboard/gpu-h200x8/")
        headers = page.locator("table.board").first.locator("thead th").all_inner_texts()
        assert headers.index("Peak fraction") == headers.index("Faster (of 87)") + 1, headers
        row = page.locator("tr", has_text="agent-opus")
        assert "18.4%" in row.locator("td.peak-col").inner_text() and "over 38" in row.inner_text()
        assert "agent transcript" in row.inner_text()
        assert "1 audited result" in page.locator("tr", has_text="agent-small").inner_text()
        page.screenshot(path=str(OUTPUT / "issue35-leaderboard-peak.png"), full_page=True)

        # The transcript page, opened from the leaderboard cell.
        row.locator("a.transcript-link").click()
        page.wait_for_load_state("load")
        assert page.url.endswith(f"/transcripts/{ids['transcript']}/")
        assert page.locator("ol.steps > li").count() == 6
        assert "6 steps, 2 tool calls, 1 reference to feedback runs" in page.inner_text("#transcript-counts")
        metered = page.locator(".metered").inner_text()
        assert f"Feedback run #{ids['run']}" in metered and "verdict incorrect" in metered
        # Collapsible: closing a step hides its body.
        page.locator("#step-3 > details > summary").click()
        assert not page.locator("#step-3 .body").is_visible()
        page.locator("#step-3 > details > summary").click()
        assert page.locator("#step-3 .body").is_visible()
        page.screenshot(path=str(OUTPUT / "issue35-transcript.png"), full_page=True)

        # An audited result: the badge on the problem page, its note as a title, and on /audits/.
        page.goto(f"{url}/problems/1_allreduce/?profile=gpu-h200x8")
        badge = page.locator("tr", has_text="agent-small").locator("a[data-audit=reward_hack]")
        assert badge.inner_text() == "audited: reward hack"
        # The peak-fraction plot: one point per correct, unflagged result (the audited reward hack is left out).
        page.wait_for_selector("#peak .main-svg", timeout=30_000)
        assert page.locator("#peak .scatterlayer .points path.point").count() == 3
        page.screenshot(path=str(OUTPUT / "issue35-audited-result.png"), full_page=True)
        badge.click()
        page.wait_for_load_state("load")
        assert "returns the output of the first timed call" in page.inner_text("#audits")

        # Getting started, from the nav.
        page.goto(f"{url}/")
        page.click("#nav-getting-started")
        page.wait_for_load_state("load")
        assert page.locator("h1").inner_text() == "Getting started"
        assert "Peak fraction" in page.inner_text("#metrics ~ dl")
        page.screenshot(path=str(OUTPUT / "issue35-getting-started.png"), full_page=True)

        page.goto(f"{url}/exploits/")
        assert page.locator("li[data-test]").count() > 50
        page.screenshot(path=str(OUTPUT / "issue35-exploits.png"), full_page=False)
        assert seen == {"dialogs": [], "csp": []}, seen
