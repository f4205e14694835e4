"""Agent transcripts in an upload: JSONL files (one JSON object per line: a message, a tool call or its result),
read with the care of the rest of the parser. They arrive through the same bounded archive reader (per-file and
per-upload limits, bombs refused: archives.py), and then here: UTF-8, no NUL, at most MAX_STEPS lines of at most
MAX_LINE_BYTES, each line a JSON object (no NaN/Infinity, nesting at most MAX_DEPTH deep: a deeper document is
refused, never recursed into by the viewer).

Layout: any ``*.jsonl`` file is a transcript. An ``attempt_N/`` folder in its path ties it to attempt N; a file name
that starts with a problem's PKB name (``13_gemm_allreduce.jsonl``, ``13_gemm_allreduce_run2.jsonl``) ties it to that
problem; otherwise it stands for the whole submission.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re

from leaderboard.submissions.uploads.types import UploadError

SUFFIX = ".jsonl"
MAX_STEPS = 20_000
MAX_LINE_BYTES = 256 * 1024
MAX_DEPTH = 32
MAX_TRANSCRIPTS = 100  # per upload: one per problem and then some; each is bounded by the per-file limit
_ATTEMPT = re.compile(r"^attempt_(\d+)\Z", re.ASCII)
_ID = re.compile(r"^(\d+)_", re.ASCII)


@dataclasses.dataclass
class TranscriptFile:
    path: str
    problem_id: int | None
    attempt: int | None
    text: str
    steps: int
    sha256: str
    size: int


def is_transcript(path: str) -> bool:
    return path.endswith(SUFFIX)


def parse_transcript(
    path: str, data: bytes, stems: dict[str, int], max_bytes: int, errors: list[UploadError]
) -> TranscriptFile | None:
    def refuse(message: str) -> None:
        errors.append(UploadError(path, "bad_transcript", message))

    if len(data) > max_bytes:
        refuse(f"file is over {max_bytes:,} bytes")
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        refuse(f"not UTF-8 text (byte {exc.start})")
        return None
    if "\x00" in text:
        refuse("contains NUL bytes")
        return None
    lines = [(n, line) for n, line in enumerate(text.split("\n"), 1) if line.strip()]
    if not lines:
        refuse("empty: one JSON object per line (a message, a tool call or a tool result)")
        return None
    if len(lines) > MAX_STEPS:
        refuse(f"{len(lines):,} lines; at most {MAX_STEPS:,} steps per transcript")
        return None
    for n, line in lines:
        problem = _line_problem(line)
        if problem:
            refuse(f"line {n}: {problem}")
            return None
    parts = path.split("/")
    attempt = next((int(m.group(1)) for m in map(_ATTEMPT.match, parts[:-1]) if m), None)
    return TranscriptFile(
        path=path,
        problem_id=_problem_of(parts[-1], stems),
        attempt=attempt,
        text=text,
        steps=len(lines),
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
    )


def _line_problem(line: str) -> str | None:
    if len(line.encode("utf-8")) > MAX_LINE_BYTES:
        return f"longer than {MAX_LINE_BYTES:,} bytes"
    try:
        value = json.loads(line, parse_constant=_no_constant)
    except RecursionError:
        return "JSON nested too deep"
    except ValueError as exc:
        return f"not JSON: {exc}"
    if not isinstance(value, dict):
        return "must be a JSON object"
    if depth(value) > MAX_DEPTH:
        return f"JSON nested deeper than {MAX_DEPTH} levels"
    return None


def depth(value) -> int:
    """Nesting depth, counted without recursion (a hostile line must not exhaust the stack here either)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in item)
    return deepest


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _problem_of(name: str, stems: dict[str, int]) -> int | None:
    match = _ID.match(name)
    if not match:
        return None
    stem = {v: k for k, v in stems.items()}.get(int(match.group(1)))
    return (
        stems[stem]
        if stem and (name == stem + SUFFIX or name.startswith(stem + "_") or name.startswith(stem + "."))
        else None
    )
