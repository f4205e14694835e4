"""What a published log shows: the ranks' stdout/stderr tails as the judge kept them, less what is the server's and
not the candidate's. Absolute paths of the server's checkout and interpreter become relative ones
(``File "/srv/pkb/evaluator/rank/worker.py"`` reads ``File "evaluator/rank/worker.py"``, site-packages
``<python>/torch/...``, anything else its file name), and the gloo/c10d start-up warning every rank prints inside
the sandbox's network namespace (``[c10d] The hostname of the client socket cannot be retrieved``, on correct
results too) is dropped. The stored document is left as the judge wrote it (results are append-only); this is a
reading of it, for the pages, the text logs and the result JSON."""

from __future__ import annotations

import re

# Top-level folders of this repository a traceback may pass through (the judge, the problems, the candidates' utils).
_PACKAGES = ("evaluator", "problems", "leaderboard", "pkb_client", "utils", "tests")
_ABSOLUTE = re.compile(r"(?<![\w.~-])/(?:[^\s\"'():,]+/)+[^\s\"'():,]*")
_NOISE = [re.compile(r"^.*c10d\]? The hostname of the client socket cannot be retrieved.*$\n?", re.MULTILINE)]


def _relative(match: re.Match) -> str:
    path = match.group(0)
    parts = path.split("/")
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            return "<python>/" + "/".join(parts[parts.index(marker) + 1 :])
    if "lib" in parts and any(p.startswith("python3") for p in parts):  # the standard library
        i = next(i for i, p in enumerate(parts) if p.startswith("python3"))
        return "<python>/" + "/".join(parts[i + 1 :])
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] in _PACKAGES and i < len(parts) - 1:
            # the last repository folder in the path: the checkout's own layout, whatever its root
            first = next(j for j in range(len(parts)) if parts[j] in _PACKAGES)
            return "/".join(parts[first:])
    return parts[-1] or path  # a scratch file: its name


def clean(text: str) -> str:
    for pattern in _NOISE:
        text = pattern.sub("", text)
    return _ABSOLUTE.sub(_relative, text)


def clean_logs(logs) -> list:
    """A document's ``logs`` with every stream cleaned (other fields kept)."""
    out = []
    for log in logs if isinstance(logs, list) else []:
        if isinstance(log, dict):
            log = {k: clean(v) if k in ("stdout", "stderr") and isinstance(v, str) else v for k, v in log.items()}
        out.append(log)
    return out
