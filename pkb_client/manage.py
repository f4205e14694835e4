"""``pkb status``, ``pkb wait``, ``pkb list`` and ``pkb delete``: what the site's pages do for one's own submissions,
from the command line. Standard library only; the same HTTP helpers, verdict lines and summary row as ``pkb submit``.

    pkb status ID            the submission's evaluations now: counts, each finished file's verdict (and reason)
    pkb wait ID              follow it until every evaluation finished, as ``pkb submit --wait`` does
    pkb list [--status judging|finished] [--profile SLUG] [--published|--private] [--limit N]
    pkb delete ID [--yes]    delete an unpublished submission (asks first)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.request

from pkb_client import submit

ENVIRONMENT = (
    "environment: PKB_URL, the site (default http://127.0.0.1:8000); PKB_TOKEN, your API token (create "
    "one on the site's account page)"
)


def _parser(prog: str, description: str, submission: bool = True) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=description, epilog=ENVIRONMENT)
    if submission:
        parser.add_argument("submission", type=int, help="the submission's id (pkb submit and pkb list print it)")
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout instead")
    parser.add_argument("--url", default=os.environ.get("PKB_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("PKB_TOKEN", ""))
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per HTTP request")
    return parser


def build_status_parser() -> argparse.ArgumentParser:
    return _parser(
        "pkb status",
        "A submission's evaluations now: how many are queued, running, done; each finished "
        "file's verdict and, for any verdict but correct, its reason.",
    )


def build_wait_parser() -> argparse.ArgumentParser:
    parser = _parser(
        "pkb wait",
        "Follow a submission until every evaluation finished (one made without --wait): "
        "each file's verdict as it lands, then the summary row.",
    )
    parser.add_argument("--poll", type=float, default=3.0, help="seconds between status checks")
    return parser


def build_list_parser() -> argparse.ArgumentParser:
    parser = _parser("pkb list", "Your submissions, newest first, with their status.", submission=False)
    parser.add_argument(
        "--status",
        choices=("judging", "finished"),
        help="judging: some evaluation still queued or running; finished: none",
    )
    parser.add_argument("--profile", help="only this hardware profile (e.g. cpu-gloo)")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--published", action="store_true", help="only those listed on the leaderboard")
    shown.add_argument("--private", action="store_true", help="only those never published (or withdrawn)")
    parser.add_argument("--limit", type=int, default=20, help="at most this many rows (default 20)")
    return parser


def build_delete_parser() -> argparse.ArgumentParser:
    parser = _parser(
        "pkb delete",
        "Delete one of your submissions that was never published, once none of its "
        "evaluations is queued or running (a published one is withdrawn instead: pkb "
        "withdraw). Asks for confirmation unless --yes.",
    )
    parser.add_argument("--yes", "-y", action="store_true", help="delete without asking")
    return parser


def _token(command: str, args) -> bool:
    if args.token:
        return True
    print(
        f"pkb {command}: no token: pass --token or set PKB_TOKEN (create one on the site's account page)",
        file=sys.stderr,
    )
    return False


def _api(args) -> str:
    return f"{args.url.rstrip('/')}/api/v1/submissions/"


def status_main(argv: list[str] | None = None) -> int:
    args = build_status_parser().parse_args(argv)
    if not _token("status", args):
        return 1
    code, body = submit.get_json(f"{_api(args)}{args.submission}/status/", args.token, args.timeout)
    if code != 200:
        return submit.report_refusal("pkb status", code, body, refused_statuses=(403, 404))
    if args.json:
        print(json.dumps(body, indent=2, default=str))
        return 0
    print(status_text(args.submission, body))
    return 0


def status_text(submission_id: int, body: dict) -> str:
    jobs = body.get("jobs") or {}
    counts = ", ".join(f"{state} {jobs.get(state, 0)}" for state in ("queued", "running", "done", "failed"))
    lines = [f"submission #{submission_id}: {'finished' if body.get('finished') else 'judging'} ({counts})"]
    lines += [submit.file_line(file) for file in body.get("files") or [] if file["status"] in ("done", "failed")]
    if body.get("finished"):
        lines.append(submit.summary_row(body))
    else:
        lines.append(f"follow it to the end with: pkb wait {submission_id}")
    return "\n".join(lines)


def wait_main(argv: list[str] | None = None) -> int:
    args = build_wait_parser().parse_args(argv)
    if not _token("wait", args):
        return 1
    try:
        final = submit.wait(args, args.submission, command="pkb wait")
    except KeyboardInterrupt:
        print(f"\nstopped waiting; submission #{args.submission} is still judged on the site", file=sys.stderr)
        return 130
    if isinstance(final, int):
        return final
    if args.json:
        print(json.dumps(final, indent=2, default=str))
    else:
        print(submit.summary_row(final))
        print(f"results: {args.url.rstrip('/')}/submissions/{args.submission}/")
    return 0


def list_main(argv: list[str] | None = None) -> int:
    args = build_list_parser().parse_args(argv)
    if not _token("list", args):
        return 1
    code, rows = submit.get_json(_api(args), args.token, args.timeout)
    if code != 200 or not isinstance(rows, list):
        return submit.report_refusal(
            "pkb list", code, rows if isinstance(rows, dict) else {}, refused_statuses=(401, 403)
        )
    chosen = []
    for row in rows:
        if len(chosen) >= args.limit:
            break
        if args.profile and row.get("profile") != args.profile:
            continue
        if args.published and row.get("visibility") != "public":
            continue
        if args.private and row.get("visibility") == "public":
            continue
        code, status = submit.get_json(f"{_api(args)}{row['id']}/status/", args.token, args.timeout)
        state = ("finished" if status.get("finished") else "judging") if code == 200 else "unknown"
        if args.status and state != args.status:
            continue
        chosen.append(dict(row, status=state, jobs=status.get("jobs") if code == 200 else None))
    if args.json:
        print(json.dumps(chosen, indent=2, default=str))
        return 0
    if not chosen:
        print("no submission matches" if rows else "no submissions yet: pkb submit DIR ... uploads one")
        return 0
    print(f"{'id':>6}  {'status':<9} {'visibility':<10} {'profile':<14} {'protocol':<17} {'k':>2}  model")
    for row in chosen:
        print(
            f"{row['id']:>6}  {row['status']:<9} {row.get('visibility', ''):<10} {row.get('profile') or '':<14} "
            f"{row.get('protocol', ''):<17} {row.get('attempts_k', ''):>2}  {row.get('model_name', '')}"
        )
    return 0


def delete_main(argv: list[str] | None = None) -> int:
    args = build_delete_parser().parse_args(argv)
    if not _token("delete", args):
        return 1
    url = f"{_api(args)}{args.submission}/"
    code, body = submit.get_json(url, args.token, args.timeout)
    if code != 200:
        print(
            f"pkb delete: no submission #{args.submission} of yours ({code or 'no connection'}): "
            f"{body.get('detail', '')}",
            file=sys.stderr,
        )
        return 2 if code in (403, 404) else 1
    if body.get("editable") is False:
        print(f"pkb delete: submission #{args.submission} is not yours: only its owner can delete it", file=sys.stderr)
        return 2
    what = (
        f"submission #{body['id']}: {body.get('model_name')} ({body.get('protocol')}, k={body.get('attempts_k')}) "
        f"on {body.get('profile')}"
    )
    if not args.yes:
        if not sys.stdin.isatty():
            print(f"pkb delete: {what}: pass --yes to delete it without a prompt", file=sys.stderr)
            return 2
        if input(f"Delete {what}? Its files, results and logs are removed. [y/N] ").strip().lower() not in ("y", "yes"):
            print("not deleted")
            return 1
    request = urllib.request.Request(
        url, method="DELETE", headers={"Authorization": f"Bearer {args.token}", "Accept": "application/json"}
    )
    code, body = submit.send(request, args.timeout)
    if code != 204:
        return submit.report_refusal("pkb delete", code, body, refused_statuses=(400, 403, 404))
    if args.json:
        print(json.dumps({"deleted": args.submission}))
    else:
        print(f"deleted: {what}")
    return 0
