"""``pkb submit``: upload a directory (or archive) in PKB layout to a pkb-arena site. Standard library only.

    pkb submit DIR --model NAME --protocol one_shot|best_of_k|agentic_feedback --attempts K --profile SLUG
               [--agent NAME --agent-version V --backend B --selection RULE --tokens N --dollars X --label TEXT]
               [--publish] [--wait] [--url URL] [--token TOKEN]

URL defaults to $PKB_URL or http://127.0.0.1:8000; the token to $PKB_TOKEN (create one on the site's account page).
Exit status: 0 accepted (and, with --wait, finished), 2 refused (each refused file and rule printed), 1 other errors.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
import urllib.error
import urllib.request
import uuid
import zipfile
from pathlib import Path

SKIP_PARTS = ("__pycache__", ".git", ".ipynb_checkpoints")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pkb submit", description="Upload kernels to a pkb-arena site.")
    parser.add_argument("path", help="a directory in PKB layout ({stem}_{backend}.py, optional attempt_N/), "
                                     "or a .zip/.tar/.tar.gz of one")
    parser.add_argument("--model", help="the model that wrote the kernels")
    parser.add_argument("--protocol", help="one_shot, best_of_k or agentic_feedback")
    parser.add_argument("--attempts", type=int, help="attempt budget k")
    parser.add_argument("--profile", help="hardware profile, e.g. gpu-h200x8 or cpu-gloo")
    parser.add_argument("--agent", help="agent / harness name")
    parser.add_argument("--agent-version")
    parser.add_argument("--backend", help="default: the suffix of the file names (or 'mixed')")
    parser.add_argument("--selection", help="first, last, best_measured or self_selected")
    parser.add_argument("--tokens", type=int, help="self-reported tokens used")
    parser.add_argument("--dollars", help="self-reported dollars spent")
    parser.add_argument("--label")
    parser.add_argument("--notes")
    parser.add_argument("--feedback-for", type=int, help="the submission this run was feedback for")
    parser.add_argument("--publish", action="store_true", help="list it on the leaderboard now")
    parser.add_argument("--wait", action="store_true", help="poll until every evaluation finished")
    parser.add_argument("--url", default=os.environ.get("PKB_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("PKB_TOKEN", ""))
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per HTTP request")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.token:
        print("pkb submit: no token: pass --token or set PKB_TOKEN (create one on the site's account page)",
              file=sys.stderr)
        return 1
    try:
        name, payload = pack(Path(args.path))
    except (OSError, ValueError) as exc:
        print(f"pkb submit: {exc}", file=sys.stderr)
        return 1
    fields = {key: value for key, value in {
        "model": args.model, "protocol": args.protocol, "attempts": args.attempts, "profile": args.profile,
        "agent": args.agent, "agent_version": args.agent_version, "backend": args.backend,
        "selection": args.selection, "tokens": args.tokens, "dollars": args.dollars, "label": args.label,
        "notes": args.notes, "feedback_for": args.feedback_for, "publish": "true" if args.publish else None,
    }.items() if value is not None}
    status, body = post_multipart(f"{args.url.rstrip('/')}/api/v1/submissions/", fields, ("archive", name, payload),
                                  args.token, args.timeout)
    if status == 201:
        print(f"accepted: submission #{body['id']} with {body.get('jobs', '?')} evaluation(s): {body.get('url')}")
        return wait(args, body["id"]) if args.wait else 0
    return report_refusal(status, body)


def pack(path: Path) -> tuple[str, bytes]:
    """An archive as is, or a directory zipped in memory (paths relative to it; caches and hidden files left out)."""
    if path.is_file():
        return path.name, path.read_bytes()
    if not path.is_dir():
        raise ValueError(f"{path} is neither a directory nor an archive")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(path.rglob("*")):
            rel = file.relative_to(path)
            if not file.is_file() or file.is_symlink():
                continue
            if any(part.startswith(".") or part in SKIP_PARTS for part in rel.parts) or file.suffix == ".pyc":
                continue
            archive.write(file, rel.as_posix())
    return f"{path.resolve().name or 'submission'}.zip", buffer.getvalue()


def post_multipart(url: str, fields: dict, file: tuple[str, str, bytes], token: str,
                   timeout: float) -> tuple[int, dict]:
    boundary = uuid.uuid4().hex
    chunks = []
    for key, value in fields.items():
        chunks.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode())
    field, filename, data = file
    chunks.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{filename}"\r\n'
                  f'Content-Type: application/octet-stream\r\n\r\n'.encode() + data + b"\r\n")
    chunks.append(f"--{boundary}--\r\n".encode())
    request = urllib.request.Request(url, data=b"".join(chunks), method="POST", headers={
        "Content-Type": f"multipart/form-data; boundary={boundary}", "Authorization": f"Bearer {token}",
        "Accept": "application/json"})
    return send(request, timeout)


def get_json(url: str, token: str, timeout: float) -> tuple[int, dict]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}",
                                                   "Accept": "application/json"})
    return send(request, timeout)


def send(request, timeout: float) -> tuple[int, dict]:
    """Send a prepared request; (status, JSON body), with status 0 when the site cannot be reached."""
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, json.loads(raw or b"{}")
        except ValueError:
            return exc.code, {"detail": raw.decode("utf-8", "replace")[:500]}
    except (urllib.error.URLError, OSError) as exc:
        return 0, {"detail": f"cannot reach the site: {exc}"}


def report_refusal(status: int, body: dict) -> int:
    print(f"pkb submit: refused ({status or 'no connection'}): {body.get('detail', '')}", file=sys.stderr)
    for error in body.get("errors") or []:
        print(f"  {error.get('file')}: {error.get('message')} [{error.get('rule')}]", file=sys.stderr)
    if body.get("next_free_at"):
        print(f"  next free slot: {body['next_free_at']}", file=sys.stderr)
    return 2 if status in (400, 429) else 1


def wait(args, submission_id: int, poll: float = 3.0) -> int:
    url = f"{args.url.rstrip('/')}/api/v1/submissions/{submission_id}/status/"
    last = None
    while True:
        status, body = get_json(url, args.token, args.timeout)
        if status != 200:
            print(f"pkb submit: status check failed ({status}): {body.get('detail')}", file=sys.stderr)
            return 1
        jobs = body["jobs"]
        line = f"queued {jobs['queued']}, running {jobs['running']}, done {jobs['done']}, failed {jobs['failed']}"
        if line != last:
            print(line, flush=True)
            last = line
        if body["finished"]:
            entry = body.get("entry") or {}
            print(f"finished: Correct {entry.get('correct', 0)} (of 87), Faster {entry.get('faster', 0)} (of 87)")
            return 0
        time.sleep(poll)


if __name__ == "__main__":
    sys.exit(main())
