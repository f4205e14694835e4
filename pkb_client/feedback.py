"""``pkb feedback``: the agent's side of the feedback loop, against a pkb-arena site. Standard library only.

    pkb feedback open [--profile SLUG] [--label TEXT]            open a session; prints its id
    pkb feedback PROBLEM FILE --session S [--M M --N N] [--json OUT] [--no-wait]
                                                                 judge FILE on PROBLEM with public seeds; print feedback
    pkb feedback show S                                          a session's measured cost and runs
    pkb feedback link S SUBMISSION                               link an agentic submission (closes the session)
    pkb feedback close S
    pkb feedback seeds PROBLEM                                   the published public seeds of a problem

Common options: --url (default $PKB_URL or http://127.0.0.1:8000), --token (default $PKB_TOKEN); --session defaults
to $PKB_SESSION. Exit status: 0 done (whatever the verdict), 2 refused (bad request, quota: the reason is printed),
1 other errors (no connection, the platform failed the run).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.request
from pathlib import Path

from pkb_client.submit import report_refusal, send

COMMANDS = ("open", "show", "link", "close", "seeds")
HELP = {  # one line per subcommand: ``pkb feedback --help`` lists them, each one's own --help starts with it
    "open": "open a feedback session on a profile; prints its id (export PKB_SESSION=...)",
    "PROBLEM FILE": "judge FILE on PROBLEM with the published public seeds; prints the feedback",
    "show": "a session's measured cost (feedback runs, wall, device-seconds) and its runs",
    "link": "link a session to your agentic submission (closes the session; its runs become the cost)",
    "close": "close a session without linking it",
    "seeds": "the published public seeds of a problem",
}
USAGE = """pkb feedback open [--profile SLUG] [--label TEXT]
       pkb feedback PROBLEM FILE --session S [--M M --N N] [--json OUT] [--no-wait]
       pkb feedback show S | close S | link S SUBMISSION | seeds PROBLEM"""


def overview_parser() -> argparse.ArgumentParser:
    """``pkb feedback`` / ``pkb feedback --help``: the subcommands, one help line each."""
    width = max(len(name) for name in HELP)
    listing = "\n".join(f"  {name:<{width}}  {text}" for name, text in HELP.items())
    return argparse.ArgumentParser(
        prog="pkb feedback",
        usage=USAGE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="The feedback loop of a pkb-arena site (agentic protocol; public seeds only).",
        epilog=f"subcommands:\n{listing}\n\nEach takes --url (default $PKB_URL), --token (default $PKB_TOKEN); "
        f"'pkb feedback SUBCOMMAND --help' for its options.",
    )


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url",
        default=os.environ.get("PKB_URL", "http://127.0.0.1:8000"),
        help="the site (default $PKB_URL or http://127.0.0.1:8000)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("PKB_TOKEN", ""),
        help="an API token (default $PKB_TOKEN; create one on the site's account page)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per HTTP request")


def build_parser(command: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"pkb feedback{' ' + command if command else ''}",
        description=HELP[command or "PROBLEM FILE"].capitalize() + ".",
    )
    if command is None:
        parser.add_argument("problem", help="id (1) or PKB stem (1_allreduce)")
        parser.add_argument("file", help="the candidate .py defining solution(*inputs)")
        parser.add_argument("--session", default=os.environ.get("PKB_SESSION", ""), help="feedback session id")
        parser.add_argument("--M", type=int)
        parser.add_argument("--N", type=int)
        parser.add_argument("--json", metavar="OUT", help="write the feedback JSON (- for stdout)")
        parser.add_argument("--no-wait", action="store_true", help="queue and print the run id only")
        parser.add_argument("--poll", type=float, default=2.0, help="seconds between status checks")
        parser.add_argument("--max-wait", type=float, default=3600.0, help="give up waiting after this long")
    elif command == "open":
        parser.add_argument("--profile", help="hardware profile slug (default: the site's default)")
        parser.add_argument("--label", default="")
    elif command in ("show", "close"):
        parser.add_argument("session")
    elif command == "link":
        parser.add_argument("session")
        parser.add_argument("submission")
    elif command == "seeds":
        parser.add_argument("problem")
    _common(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        overview_parser().print_help(sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    command = argv[0] if argv and argv[0] in COMMANDS else None
    args = build_parser(command).parse_args(argv[1:] if command else argv)
    base = args.url.rstrip("/") + "/api/v1/feedback"
    if command == "seeds":
        status, body = request("GET", f"{base}/seeds/{args.problem}/", args.token, None, args.timeout)
        if status != 200:
            return refused(status, body)
        print(" ".join(str(s) for s in body["seeds"]))
        return 0
    if not args.token:
        print(
            "pkb feedback: no token: pass --token or set PKB_TOKEN (create one on the site's account page)",
            file=sys.stderr,
        )
        return 1
    if command == "open":
        status, body = request(
            "POST",
            f"{base}/sessions/",
            args.token,
            {"profile": args.profile, "label": args.label} if args.profile else {"label": args.label},
            args.timeout,
        )
        if status != 201:
            return refused(status, body)
        print(body["id"])
        print(f"session {body['id']} open on {body['profile']}: export PKB_SESSION={body['id']}", file=sys.stderr)
        return 0
    if command in ("show", "close", "link"):
        url = f"{base}/sessions/{args.session}/" + {"show": "", "close": "close/", "link": "link/"}[command]
        payload = {"submission": args.submission} if command == "link" else ({} if command == "close" else None)
        status, body = request("GET" if command == "show" else "POST", url, args.token, payload, args.timeout)
        if status != 200:
            return refused(status, body)
        meter = body["metering"]
        print(
            f"session {body['id']} on {body['profile']}: {'open' if body['open'] else 'closed'}"
            + (f", linked to submission #{body['submission']}" if body.get("submission") else "")
        )
        print(
            f"measured: {meter['runs']} feedback runs, wall {meter['wall_s']} s, "
            + device_seconds(args.url.rstrip("/"), body["profile"], meter, args.timeout)
        )
        for run in body.get("runs") or []:
            print(f"  run {run['id']}: {run['problem']} {run['status']} {run['verdict'] or ''}")
        return 0
    return run_feedback(args, base)


def run_feedback(args, base: str) -> int:
    if not args.session:
        print("pkb feedback: no session: pass --session or set PKB_SESSION (pkb feedback open)", file=sys.stderr)
        return 1
    try:
        code = Path(args.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"pkb feedback: cannot read {args.file}: {exc}", file=sys.stderr)
        return 1
    payload = {"session": args.session, "problem": args.problem, "code": code, "filename": Path(args.file).name}
    for key in ("M", "N"):
        if getattr(args, key) is not None:
            payload[key] = getattr(args, key)
    status, body = request("POST", f"{base}/", args.token, payload, args.timeout)
    if status != 202:
        return refused(status, body)
    print(f"feedback run {body['id']} queued on {body['queue']} (public seeds)", file=sys.stderr)
    if args.no_wait:
        print(body["id"])
        return 0
    url, deadline = body["url"], time.monotonic() + args.max_wait
    while body["status"] not in ("done", "failed"):
        if time.monotonic() > deadline:
            print(f"pkb feedback: run {body['id']} still {body['status']} after {args.max_wait:.0f} s", file=sys.stderr)
            return 1
        time.sleep(args.poll)
        status, fresh = request("GET", url, args.token, None, args.timeout)
        if status == 200:
            body = fresh
        elif status != 0:
            return refused(status, fresh)
    feedback = body.get("feedback") or {}
    if args.json:
        text = json.dumps(body, indent=2, default=str)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text)
    if body["status"] == "failed":
        print(
            f"pkb feedback: run {body['id']} failed: {feedback.get('error', 'platform failure')} (not counted)",
            file=sys.stderr,
        )
        return 1
    print(render(feedback))
    return 0


def device_seconds(base: str, slug: str, meter: dict, timeout: float) -> str:
    """The session's device-seconds in its profile's unit (leaderboard/scoring/costs.py): GPU-seconds on a GPU profile;
    on a CPU one rank-seconds (W x wall), never "0 GPU-seconds"."""
    from pkb_client.submit import profile_of

    profile = profile_of(base, slug, timeout) or {}
    if profile.get("device") == "cpu" and profile.get("world_size"):
        return f"{meter['wall_s'] * profile['world_size']:.1f} rank-seconds (CPU profile: no GPU-seconds)"
    return f"GPU-seconds {meter['gpu_seconds']}"


def render(feedback: dict) -> str:
    """The same text as the site's run page (evaluator/contract/feedback_text.py renders both)."""
    from evaluator.contract.feedback_text import (
        text,  # the judge's torch-free contract: the site's run page says the same
    )

    return text(feedback)


def request(method: str, url: str, token: str, payload, timeout: float) -> tuple[int, dict]:
    data = json.dumps(payload).encode() if payload is not None else None
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if data is not None:
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    return send(req, timeout)


def refused(status: int, body: dict) -> int:
    return report_refusal("pkb feedback", status, body, refused_statuses=(400, 403, 404, 429))


if __name__ == "__main__":
    sys.exit(main())
