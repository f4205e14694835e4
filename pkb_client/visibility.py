"""``pkb publish`` and ``pkb withdraw``: list a submission of yours on the site's leaderboards, or take it off them.
Standard library only.

    pkb publish ID [--yes] [--json] [--url URL] [--token TOKEN]
    pkb withdraw ID [--yes] [--json] [--url URL] [--token TOKEN]

Each asks first on a terminal (``--yes`` for scripts) and refuses another user's submission before asking.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.request

from pkb_client.submit import get_json, report_refusal, send

# What ``pkb publish`` and ``pkb withdraw`` say and do: the visibility each wants, the API action, the question asked.
VISIBILITY_CHANGES = {
    "publish": dict(
        wanted="public",
        done="published",
        api="publish/",
        description="List one of your submissions on the public leaderboard. Its code and logs become "
        "visible to everyone; asks for confirmation unless --yes.",
        question="Publish {what} on the leaderboard? Its code and logs become public.",
    ),
    "withdraw": dict(
        wanted="withdrawn",
        done="withdrawn",
        api="withdraw/",
        description="Take one of your published submissions off every leaderboard and export; its page, "
        "results, code and logs stay yours. Asks for confirmation unless --yes.",
        question="Withdraw {what} from the leaderboards?",
    ),
}


def build_visibility_parser(action: str) -> argparse.ArgumentParser:
    change = VISIBILITY_CHANGES[action]
    parser = argparse.ArgumentParser(
        prog=f"pkb {action}",
        description=change["description"],
        epilog="environment: PKB_URL, the site; PKB_TOKEN, your API token",
    )
    parser.add_argument("submission", type=int, help="the submission's id (pkb submit prints it)")
    parser.add_argument("--yes", "-y", action="store_true", help=f"{action} without asking")
    parser.add_argument("--json", action="store_true", help="print the submission as JSON afterwards")
    parser.add_argument("--url", default=os.environ.get("PKB_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("PKB_TOKEN", ""))
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per HTTP request")
    return parser


def build_publish_parser() -> argparse.ArgumentParser:
    return build_visibility_parser("publish")


def visibility_main(action: str, argv: list[str] | None = None) -> int:
    change = VISIBILITY_CHANGES[action]
    args = build_visibility_parser(action).parse_args(argv)
    if not args.token:
        print(
            f"pkb {action}: no token: pass --token or set PKB_TOKEN (create one on the site's account page)",
            file=sys.stderr,
        )
        return 1
    base = f"{args.url.rstrip('/')}/api/v1/submissions/{args.submission}/"
    status, body = get_json(base, args.token, args.timeout)
    if status != 200:
        print(
            f"pkb {action}: no submission #{args.submission} of yours ({status or 'no connection'}): "
            f"{body.get('detail', '')}",
            file=sys.stderr,
        )
        return 2 if status in (403, 404) else 1
    # Ownership first: another user's public submission is readable, and was answered "already public" (exit 0)
    # while the site would refuse the change with 403 (issue 35, defect 2).
    if body.get("editable") is False:
        print(
            f"pkb {action}: submission #{args.submission} is not yours: only its owner (or the site's staff) can "
            f"{action} it",
            file=sys.stderr,
        )
        return 2
    if body.get("visibility") == change["wanted"] and body.get("editable"):
        print(f"submission #{body['id']} is already {change['wanted']}: {args.url.rstrip('/')}{body.get('url', '')}")
        return 0
    what = (
        f"submission #{body['id']}: {body.get('model_name')} ({body.get('protocol')}, k={body.get('attempts_k')}) "
        f"on {body.get('profile')}"
    )
    if not args.yes:
        if not sys.stdin.isatty():
            print(f"pkb {action}: {what}: pass --yes to {action} without a prompt", file=sys.stderr)
            return 2
        answer = input(change["question"].format(what=what) + " [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print(f"not {change['done']}")
            return 1
    request = urllib.request.Request(
        base + change["api"],
        data=b"",
        method="POST",
        headers={"Authorization": f"Bearer {args.token}", "Accept": "application/json"},
    )
    status, body = send(request, args.timeout)
    if status != 200:
        return report_refusal(f"pkb {action}", status, body, refused_statuses=(400, 403, 404))
    if args.json:
        print(json.dumps(body, indent=2, default=str))
    else:
        print(f"{change['done']}: {what}: {args.url.rstrip('/')}{body.get('url', '')}")
    return 0


def publish_main(argv: list[str] | None = None) -> int:
    return visibility_main("publish", argv)


def withdraw_main(argv: list[str] | None = None) -> int:
    return visibility_main("withdraw", argv)
