"""Home page load in headless Chromium, before and after a change, side by side (issue 26: static files).

    .venv/bin/python benchmarks/page_load.py [--before REV] [--runs 5]

Starts the embedded server (`manage.py runserver_with_worker`, SQLite, the settings `make serve` uses) twice: once
from a git worktree of REV ("before"), once from this working tree ("after"), each on a fresh database holding one
published submission (so the home page draws its plot and loads plotly.js). Then loads the home page in Debian's
Chromium (/usr/bin/chromium) RUNS times with a cold cache and once more warm (same browser context), and prints the
bytes the browser received (transfer sizes: compressed where the server compressed), the largest file's, and the
load-event time (median of the cold runs, and the warm one). On loopback bytes cost almost nothing; --mbps N has
Chromium emulate an N Mbit/s link with 20 ms latency (DevTools network conditions), closer to a lab's browser.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
SEED = (
    "from django.contrib.auth import get_user_model; from leaderboard.accounts.services import submitter_for; "
    "from leaderboard.catalogue.models import HardwareProfile as H; from leaderboard.scoring.models import "
    "LeaderboardEntry as E; from leaderboard.submissions.models import Submission as S; "
    "p = H.objects.get(slug='cpu-gloo'); u = get_user_model().objects.create(username='bench'); "
    "s = S.objects.create(submitter=submitter_for(u), profile=p, model_name='bench', backend='torch', "
    "protocol='one_shot', visibility='public'); "
    "E.objects.create(submission=s, profile=p, protocol='one_shot', backend='torch', attempts_k=1, listed=True)"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(tree: Path, tmp: Path):
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    env.update(
        DATABASE_URL=f"sqlite:///{tmp}/site.sqlite3",
        PKB_DATA_DIR=str(tmp),
        DJANGO_SECRET_KEY="bench",
        DJANGO_SETTINGS_MODULE="leaderboard.settings",
        PYTHONPATH=str(tree),
    )
    for args in (["migrate", "--noinput"], ["load_problems"], ["shell", "-c", SEED]):
        subprocess.run(
            [sys.executable, "manage.py", *args], cwd=tree, env=env, check=True, capture_output=True, timeout=600
        )
    port = free_port()
    log = open(tmp / "server.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "runserver_with_worker", f"127.0.0.1:{port}"],
        cwd=tree,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/healthz", timeout=2)
            return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("server did not start:\n" + (tmp / "server.log").read_text())


MEASURE = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const res = performance.getEntriesByType('resource');
  const all = [nav, ...res];
  const largest = res.reduce((a, r) => (r.encodedBodySize > (a ? a.encodedBodySize : -1) ? r : a), null);
  return {load_ms: nav.loadEventEnd, bytes: all.reduce((s, r) => s + r.transferSize, 0),
          decoded: all.reduce((s, r) => s + r.decodedBodySize, 0),
          largest: largest ? [largest.name.split('/').pop(), largest.encodedBodySize, largest.decodedBodySize] : null};
}"""


def _throttle(context, page, mbps: float) -> None:
    if mbps:
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send(
            "Network.emulateNetworkConditions",
            {"offline": False, "latency": 20, "downloadThroughput": mbps * 125_000, "uploadThroughput": mbps * 125_000},
        )


def measure(url: str, runs: int, mbps: float = 0.0) -> dict:
    from playwright.sync_api import sync_playwright

    cold = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        for i in range(runs + 1):  # the first load warms the server (collected files, compiled templates)
            context = browser.new_context()
            page = context.new_page()
            _throttle(context, page, mbps)
            page.goto(f"{url}/")
            page.wait_for_selector("#pareto .main-svg", timeout=60_000)
            page.wait_for_load_state("load")
            got = page.evaluate(MEASURE)
            if i:
                cold.append(got)
            if i == runs:
                page.reload()
                page.wait_for_selector("#pareto .main-svg", timeout=60_000)
                page.wait_for_load_state("load")
                warm = page.evaluate(MEASURE)
            context.close()
        browser.close()
    return {
        "cold_ms": statistics.median(r["load_ms"] for r in cold),
        "bytes": cold[-1]["bytes"],
        "decoded": cold[-1]["decoded"],
        "largest": cold[-1]["largest"],
        "warm_ms": warm["load_ms"],
        "warm_bytes": warm["bytes"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", default="46a78a4", help="git revision of the 'before' column")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mbps", type=float, default=0.0, help="emulated link speed (0: loopback as is)")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        worktree = tmp / "before-tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(worktree), args.before],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        try:
            for name, tree in (("before", worktree), ("after", ROOT)):
                data = tmp / name
                data.mkdir()
                proc, url = start(tree, data)
                try:
                    results[name] = measure(url, args.runs, args.mbps)
                finally:
                    proc.terminate()
                    proc.wait(timeout=30)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, capture_output=True)
    link = f"{args.mbps:g} Mbit/s + 20 ms emulated" if args.mbps else "loopback"
    print(f"home page, {args.runs} cold loads each (median), then one warm reload; before = {args.before}; {link}")
    print(
        f"{'':8} {'received':>12} {'decoded':>12} {'largest file (sent / decoded)':>44} {'cold load':>10} "
        f"{'warm load':>10} {'warm recv':>10}"
    )
    for name, r in results.items():
        largest = f"{r['largest'][0]} {r['largest'][1]:,} / {r['largest'][2]:,}" if r["largest"] else "-"
        print(
            f"{name:8} {r['bytes']:>12,} {r['decoded']:>12,} {largest:>44} {r['cold_ms']:>8.0f}ms "
            f"{r['warm_ms']:>8.0f}ms {r['warm_bytes']:>10,}"
        )
    b, a = results["before"], results["after"]
    print(
        f"ratio after/before: bytes received {a['bytes'] / b['bytes']:.3f}, "
        f"cold load {a['cold_ms'] / b['cold_ms']:.2f}, "
        f"warm load {a['warm_ms'] / b['warm_ms']:.2f}"
    )


if __name__ == "__main__":
    main()
