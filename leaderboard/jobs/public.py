"""The public reading of a judge's document (``/results/<id>.json`` for anyone but staff): what the judge decided and
measured, nothing of the server. The candidate is named by its path inside the submission (not the scratch copy's
absolute path, which carries the worker's id and pid); the sandbox is described by what it enforced (limits,
namespaces, memory, pauses, clean-up), without its internals (box uid and directory, /run/..., the host's control
group paths); every other text is read through jobs/logs.py ``clean`` (absolute paths made relative, start-up noise
dropped). The stored document stays as the judge wrote it (results are append-only); staff see it whole."""

from __future__ import annotations

import re

from leaderboard.jobs import logs

# The sandbox's own description of what it enforced, kept; its internals (box, cgroup, user, filesystem) are not.
SANDBOX_PUBLIC = (
    "enabled",
    "required",
    "complete",
    "summary",
    "devices",
    "network",
    "pid",
    "limits",
    "memory",
    "pauses",
    "cleanup",
)
_BOX = re.compile(r"box \d+ \(uid \d+\),\s*|\buid \d+\b")
# Keys of a run's internals, wherever they sit: dropped from the public document.
INTERNAL_KEYS = {"worker", "pids", "uid", "box", "cgroup", "scratch", "scratch_dir", "host_path"}


def public_document(document: dict, filename: str) -> dict:
    """A copy of ``document`` fit to publish; ``filename``: the candidate's path inside its submission."""
    public = _clean(dict(document))
    public["candidate"] = filename
    environment = public.get("environment")
    if isinstance(environment, dict) and isinstance(environment.get("sandbox"), dict):
        sandbox = environment["sandbox"]
        environment["sandbox"] = {k: sandbox[k] for k in SANDBOX_PUBLIC if k in sandbox}
        if isinstance(environment["sandbox"].get("summary"), str):
            environment["sandbox"]["summary"] = _BOX.sub("", environment["sandbox"]["summary"])
    return public


def public_text(text: str) -> str:
    """A message or log as published: no absolute server path."""
    return logs.clean(text) if isinstance(text, str) else text


def _clean(value):
    if isinstance(value, dict):
        return {
            k: _clean(v) for k, v in value.items() if k not in INTERNAL_KEYS and not (k == "pid" and isinstance(v, int))
        }  # "pid": a namespace's words
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return public_text(value)
