"""Interpreting the members: the folder layout, file names (``<id>_<stem>_<backend>.py``), attempts and metadata."""

from __future__ import annotations

import hashlib
import json
import re

from evaluator.contract import schema
from leaderboard.submissions.uploads import transcripts as transcript_files
from leaderboard.submissions.uploads.archives import _path_error, _too_big
from leaderboard.submissions.uploads.types import CandidateFile, Limits, ParsedUpload, UploadError, UploadRejected

# \Z, not $: "$" also matches before a trailing newline. ASCII: \d would take any script's digits.
ATTEMPT_DIR = re.compile(r"^attempt_(\d+)\Z", re.ASCII)
BACKEND = re.compile(r"^[a-z][a-z0-9]*\Z")
FILE_ID = re.compile(r"^(\d+)_", re.ASCII)
METADATA_FILE = "submission.json"


def parse(members: list[tuple[str, bytes]], stems: dict[str, int], limits: Limits) -> ParsedUpload:
    """Candidate files and metadata from (path, bytes) pairs; raises UploadRejected listing every problem found."""
    errors: list[UploadError] = []
    members = [(_normalise(path), data) for path, data in members]
    for path, _ in members:
        error = _path_error(path)
        if error:
            errors.append(error)
    if errors:
        raise UploadRejected(errors)
    members = _strip_common_folder([(p, d) for p, d in members if not _ignored_noise(p)])
    total = sum(len(d) for _, d in members)
    if total > limits.max_total_bytes:
        raise UploadRejected([_too_big("(upload)", total, limits.max_total_bytes)])

    metadata, ignored, files, seen_paths, transcripts = {}, [], [], set(), []
    for path, data in members:
        if path in seen_paths:
            errors.append(UploadError(path, "duplicate", "the same path appears twice"))
            continue
        seen_paths.add(path)
        if path == METADATA_FILE:
            metadata = _read_metadata(path, data, errors)
            continue
        if transcript_files.is_transcript(path):
            transcript = transcript_files.parse_transcript(path, data, stems, limits.max_file_bytes, errors)
            if transcript:
                transcripts.append(transcript)
            continue
        if not path.endswith(".py"):
            ignored.append(path)
            continue
        candidate = _candidate(path, data, stems, limits, errors)
        if candidate:
            files.append(candidate)

    _check_layout(files, errors)
    _check_duplicates(files, errors)
    if len(files) > limits.max_files:
        errors.append(UploadError("(upload)", "too_many_files", f"{len(files)} files; the limit is {limits.max_files}"))
    if len(transcripts) > transcript_files.MAX_TRANSCRIPTS:
        errors.append(
            UploadError(
                "(upload)",
                "too_many_files",
                f"{len(transcripts)} transcripts; the limit is {transcript_files.MAX_TRANSCRIPTS}",
            )
        )
    if not files and not errors:
        errors.append(UploadError("(upload)", "empty", "no candidate file ({stem}_{backend}.py) found"))
    if errors:
        raise UploadRejected(errors)
    digest = hashlib.sha256()
    for f in sorted(files, key=lambda f: f.path):
        digest.update(f.path.encode() + b"\0" + f.sha256.encode() + b"\n")
    return ParsedUpload(
        files=sorted(files, key=lambda f: (f.problem_id, f.attempt)),
        metadata=metadata,
        ignored=sorted(ignored),
        sha256=digest.hexdigest(),
        transcripts=sorted(transcripts, key=lambda t: t.path),
    )


def _normalise(path: str) -> str:
    while path.startswith("./"):
        path = path[2:]
    return path


def _ignored_noise(path: str) -> bool:
    parts = path.split("/")
    return any(p.startswith(".") or p == "__pycache__" or p == "__MACOSX" for p in parts) or path.endswith(".pyc")


def _strip_common_folder(members: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """``run_42/attempt_1/x.py`` -> ``attempt_1/x.py`` when every member lies under one folder that is no attempt."""
    tops = {p.split("/", 1)[0] for p, _ in members}
    if len(tops) == 1 and all("/" in p for p, _ in members):
        top = next(iter(tops))
        if not ATTEMPT_DIR.match(top):
            return [(p.split("/", 1)[1], d) for p, d in members]
    return members


def _read_metadata(path: str, data: bytes, errors: list[UploadError]) -> dict:
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except RecursionError:
        errors.append(UploadError(path, "bad_metadata", "JSON nested too deep"))
        return {}
    except (UnicodeDecodeError, ValueError) as exc:
        errors.append(UploadError(path, "bad_metadata", f"not valid UTF-8 JSON: {exc}"))
        return {}
    if not isinstance(value, dict):
        errors.append(UploadError(path, "bad_metadata", "must be a JSON object"))
        return {}
    return value


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _candidate(
    path: str, data: bytes, stems: dict[str, int], limits: Limits, errors: list[UploadError]
) -> CandidateFile | None:
    parts = path.split("/")
    if len(parts) == 1:
        attempt, name = 1, parts[0]
    elif len(parts) == 2 and ATTEMPT_DIR.match(parts[0]):
        attempt, name = int(ATTEMPT_DIR.match(parts[0]).group(1)), parts[1]
        if attempt < 1:
            errors.append(UploadError(path, "bad_layout", "attempt folders are numbered from attempt_1"))
            return None
    else:
        errors.append(
            UploadError(path, "bad_layout", "files go at the top level or in attempt_N/ folders ({stem}_{backend}.py)")
        )
        return None
    match = FILE_ID.match(name)
    stem_by_id = {v: k for k, v in stems.items()}
    stem = stem_by_id.get(int(match.group(1))) if match else None
    if stem is None or not name.startswith(stem + "_"):
        hint = f"; problem {match.group(1)} is {stem}, so expected {stem}_<backend>.py" if stem else ""
        errors.append(UploadError(path, "unknown_problem", f"not a known problem name{hint}"))
        return None
    backend = name[len(stem) + 1 : -3]
    if not BACKEND.match(backend):
        errors.append(UploadError(path, "bad_backend", f"backend suffix {backend!r} must be lowercase letters/digits"))
        return None
    if len(data) > limits.max_file_bytes:
        errors.append(_too_big(path, len(data), limits.max_file_bytes))
        return None
    try:
        code = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        errors.append(UploadError(path, "not_utf8", f"not UTF-8 text (byte {exc.start})"))
        return None
    if "\x00" in code:
        errors.append(UploadError(path, "not_utf8", "contains NUL bytes"))
        return None
    unsupported = schema.unsupported_backend(path, code)
    if unsupported:  # it could only ever be a compile_error: refused now, naming the backend and the supported ones
        errors.append(UploadError(path, "unsupported_backend", unsupported))
        return None
    return CandidateFile(
        path=path,
        problem_id=stems[stem],
        stem=stem,
        backend=backend,
        attempt=attempt,
        code=code,
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
    )


def _check_layout(files: list[CandidateFile], errors: list[UploadError]) -> None:
    flat = [f for f in files if "/" not in f.path]
    nested = [f for f in files if "/" in f.path]
    if flat and nested:
        errors.append(
            UploadError(
                flat[0].path, "bad_layout", "mixes top-level files with attempt_N/ folders; put every file in a folder"
            )
        )


def _check_duplicates(files: list[CandidateFile], errors: list[UploadError]) -> None:
    seen: dict[tuple[int, int], str] = {}
    for f in files:
        key = (f.problem_id, f.attempt)
        if key in seen:
            errors.append(
                UploadError(f.path, "duplicate", f"problem {f.stem} attempt {f.attempt} already given by {seen[key]}")
            )
        else:
            seen[key] = f.path
