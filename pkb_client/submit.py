"""``pkb submit``: upload a directory (or archive) in PKB layout to a pkb-arena site, follow its
evaluations. Standard library, plus rich for the progress bar (imported only when a terminal shows it).

    pkb submit DIR --model NAME --protocol one_shot|best_of_k|agentic_feedback --attempts K --profile SLUG
               [--agent NAME --agent-version V --backend B --selection RULE --tokens N --dollars X --label TEXT]
               [--publish] [--wait] [--json] [--url URL] [--token TOKEN]
    (pkb publish ID and pkb withdraw ID: visibility.py; pkb status ID, pkb wait ID, pkb list and pkb delete ID:
    manage.py)

URL defaults to $PKB_URL or http://127.0.0.1:8000; the token to $PKB_TOKEN (create one on the site's account page).
A submission is private (only its owner sees it) until published. ``--wait`` prints each file's verdict as it lands
(with a progress bar on a terminal), then the summary row and the URL; ``--json`` prints one JSON document on
stdout instead, and nothing else there.
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
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported at run time only when a terminal shows the bar (Progress)
    import rich.progress

SKIP_PARTS = ("__pycache__", ".git", ".ipynb_checkpoints")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pkb submit",
        description="Upload kernels to a pkb-arena site.",
        epilog="environment: PKB_URL, the site (default http://127.0.0.1:8000; --url overrides it); PKB_TOKEN, your "
        "API token (--token overrides it; create one on the site's account page). Without --wait, follow the "
        "submission later with: pkb status ID, pkb wait ID; pkb list shows your submissions.",
    )
    parser.add_argument(
        "path",
        help="a directory in PKB layout ({stem}_{backend}.py, optional attempt_N/), or a .zip/.tar/.tar.gz of one",
    )
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
    parser.add_argument(
        "--wait",
        action="store_true",
        help="follow the evaluations (later: pkb wait ID): each file's verdict as it lands, then the summary and URL",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON document on stdout (the submission; with --wait, its final status and "
        "every file's verdict) and no progress",
    )
    parser.add_argument("--poll", type=float, default=3.0, help="seconds between status checks with --wait")
    parser.add_argument("--url", default=os.environ.get("PKB_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("PKB_TOKEN", ""))
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per HTTP request")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.token:
        print(
            "pkb submit: no token: pass --token or set PKB_TOKEN (create one on the site's account page)",
            file=sys.stderr,
        )
        return 1
    try:
        name, payload = pack(Path(args.path))
    except (OSError, ValueError) as exc:
        print(f"pkb submit: {exc}", file=sys.stderr)
        return 1
    fields = {
        key: value
        for key, value in {
            "model": args.model,
            "protocol": args.protocol,
            "attempts": args.attempts,
            "profile": args.profile,
            "agent": args.agent,
            "agent_version": args.agent_version,
            "backend": args.backend,
            "selection": args.selection,
            "tokens": args.tokens,
            "dollars": args.dollars,
            "label": args.label,
            "notes": args.notes,
            "feedback_for": args.feedback_for,
            "publish": "true" if args.publish else None,
        }.items()
        if value is not None
    }
    base = args.url.rstrip("/")
    status, body = post_multipart(
        f"{base}/api/v1/submissions/", fields, ("archive", name, payload), args.token, args.timeout
    )
    if status != 201:
        if args.json:
            print(json.dumps({"accepted": False, "http_status": status, **body}, indent=2, default=str))
        return report_refusal("pkb submit", status, body)
    if not args.json:
        print(
            f"accepted: submission #{body['id']} with {body.get('jobs', '?')} evaluation(s) on "
            f"{body.get('profile')}: {body.get('url')}"
        )
        profile = profile_of(base, body.get("profile"), args.timeout)
        if profile:
            print(trials_note(profile))
    try:
        final = wait(args, body["id"]) if args.wait else None
    except KeyboardInterrupt:
        print(
            f"\nstopped waiting; submission #{body['id']} is still judged on the site: {body.get('url')}; "
            f"follow it again with: pkb wait {body['id']}",
            file=sys.stderr,
        )
        return 130
    if isinstance(final, int):
        return final
    if args.json:
        print(json.dumps(document(base, body, final), indent=2, default=str))
    else:
        if final is not None:
            print(summary_row(final))
            print(f"results: {body.get('url')}")
        else:
            print(f"follow its evaluations: pkb status {body['id']}, or pkb wait {body['id']} until they finish")
        print(publish_note(body))
    return 0


def document(base: str, created: dict, final: dict | None) -> dict:
    """What ``--json`` prints: the submission as created, its final status (``--wait``), how to publish it."""
    sid = created["id"]
    return {
        "accepted": True,
        "submission": created,
        "url": created.get("url"),
        "visibility": created.get("visibility"),
        "status": final,
        "publish": {"command": f"pkb publish {sid}", "api": f"POST {base}/api/v1/submissions/{sid}/publish/"},
    }


def publish_note(created: dict) -> str:
    if created.get("visibility") == "public":
        return "public: listed on the leaderboard (code and logs visible to everyone)"
    return (
        f"private: only you can see it. To list it on the leaderboard (its code and logs become public too): "
        f"pkb publish {created['id']}   (or the Publish button on its page)"
    )


def profile_of(base: str, slug: str | None, timeout: float) -> dict | None:
    status, body = get_json(f"{base}/api/v1/profiles/", "", timeout)
    if status != 200 or not isinstance(body, list):
        return None
    return next((p for p in body if p.get("slug") == slug), None)


def trials_note(profile: dict) -> str:
    """Why the site's trial count may differ from ``pkb eval``'s: each profile sets its own (the default of
    ``pkb eval --trials`` is 5); both add one re-check trial after timing."""
    trials, W, device = profile.get("trials"), profile.get("world_size"), profile.get("device")
    reduced = " --reduced" if device == "cpu" else ""
    if profile.get("shared_device"):  # every rank on one GPU: the profiles API says so (docs/site.md)
        reduced += " --shared-device"
    return (
        f"judged on {profile.get('slug')} with {trials} correctness trial(s) + 1 re-check after timing at "
        f"W={W} on {device} (the profile's own count; a local eval defaults to 5 trials); "
        f"reproduce one file with: pkb eval PROBLEM FILE -W {W} --device {device} --trials {trials}{reduced}"
    )


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


def post_multipart(
    url: str, fields: dict, file: tuple[str, str, bytes], token: str, timeout: float
) -> tuple[int, dict]:
    boundary = uuid.uuid4().hex
    chunks = []
    for key, value in fields.items():
        chunks.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode())
    field, filename, data = file
    chunks.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{filename}"\r\n'
        f"Content-Type: application/octet-stream\r\n\r\n".encode()
        + data
        + b"\r\n"
    )
    chunks.append(f"--{boundary}--\r\n".encode())
    request = urllib.request.Request(
        url,
        data=b"".join(chunks),
        method="POST",
        headers={
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Authorization": f"Bearer {token}",
            "Accept": "application/json",
        },
    )
    return send(request, timeout)


def get_json(url: str, token: str, timeout: float) -> tuple[int, dict]:
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return send(urllib.request.Request(url, headers=headers), timeout)


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


def report_refusal(command: str, status: int, body: dict, refused_statuses=(400, 429)) -> int:
    """What the site refused and why, on stderr, for every ``pkb`` command: the detail, each error (an upload's file
    and rule, or a request's field) and the next free slot of a quota. Returns the command's exit status: 2 where the
    site refused the request (``refused_statuses``), 1 for anything else (no connection, a server error)."""
    print(f"{command}: refused ({status or 'no connection'}): {body.get('detail', '')}", file=sys.stderr)
    for error in body.get("errors") or []:
        rule = f" [{error['rule']}]" if error.get("rule") else ""
        print(f"  {error.get('file') or error.get('field')}: {error.get('message')}{rule}", file=sys.stderr)
        if error.get("url"):  # the page the message refers to (an identical earlier upload), once
            print(f"    see {error['url']}", file=sys.stderr)
    if body.get("next_free_at"):
        print(f"  next free slot: {body['next_free_at']}", file=sys.stderr)
    return 2 if status in refused_statuses else 1


def wait(args, submission_id: int, command: str = "pkb submit") -> dict | int:
    """Poll the status endpoint until every evaluation finished: the final status document, or an exit status.
    Each file's verdict is printed once, as it lands; a progress bar runs on a terminal (never with --json).
    ``pkb wait`` (manage.py) follows a submission made without --wait through this same loop."""
    url = f"{args.url.rstrip('/')}/api/v1/submissions/{submission_id}/status/"
    shown: set = set()
    with Progress(enabled=not args.json and sys.stdout.isatty()) as progress:
        while True:
            status, body = get_json(url, args.token, args.timeout)
            if status != 200:
                progress.close()
                print(f"{command}: status check failed ({status}): {body.get('detail')}", file=sys.stderr)
                return 1
            jobs = body["jobs"]
            progress.update(jobs["done"] + jobs["failed"], sum(jobs.values()))
            if "files" not in body and not args.json:  # a site without per-file status: the counts, when they change
                counts = ", ".join(f"{state} {jobs[state]}" for state in ("queued", "running", "done", "failed"))
                if counts not in shown:
                    shown.add(counts)
                    progress.print(counts)
            for file in body.get("files") or []:
                if file["status"] in ("done", "failed") and file["job"] not in shown:
                    shown.add(file["job"])
                    if not args.json:
                        progress.print(file_line(file))
            if body["finished"]:
                return body
            time.sleep(args.poll)


def file_line(file: dict) -> str:
    verdict = file.get("verdict") or ("platform failure (not counted)" if file["status"] == "failed" else "?")
    where = f"problem {file['problem']}" + (f", attempt {file['attempt']}" if file.get("attempt") else "")
    speed = ""
    if file.get("speedup") is not None:
        speed = f"  speedup {file['speedup']:.3f}x{' (faster)' if file.get('faster') else ''}"
    line = f"  {verdict:<16} {file['file']}  ({where}){speed}"
    # The reason of any verdict but correct (the SyntaxError line, the mismatch, the timeout), as --json gives it.
    if file.get("message") and file.get("verdict") not in (None, "correct"):
        line += "\n" + "\n".join(f"      {part}" for part in str(file["message"]).splitlines()[:6])
    return line


def summary_row(final: dict) -> str:
    entry = final.get("entry") or {}
    geomean = entry.get("geomean_speedup")
    jobs = final.get("jobs") or {}
    return (
        f"finished: Correct {entry.get('correct', 0)} (of 87), Faster {entry.get('faster', 0)} (of 87), "
        f"judged {entry.get('judged', 0)}, geomean speedup "
        f"{'-' if geomean is None else f'{geomean:.3f}x'}; evaluations done {jobs.get('done', 0)}, "
        f"platform failures {jobs.get('failed', 0)}"
    )


class Progress:
    """A rich progress bar on a terminal; elsewhere (pipes, files, --json) nothing but the printed lines."""

    def __init__(self, enabled: bool):
        self._bar: rich.progress.Progress | None = None
        self._task: rich.progress.TaskID | None = None
        if enabled:
            try:
                from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
                from rich.progress import Progress as RichProgress
            except ImportError:  # the base install has rich; a bare copy of this file still works
                return
            self._bar = RichProgress(
                TextColumn("evaluations"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), transient=True
            )

    def __enter__(self):
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def update(self, completed: int, total: int) -> None:
        if self._bar is None:
            return
        if self._task is None:
            self._task = self._bar.add_task("evaluations", total=total)
        self._bar.update(self._task, completed=completed, total=total)

    def print(self, line: str) -> None:
        if self._bar is not None:
            self._bar.console.print(line, markup=False, highlight=False)
        else:
            print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
