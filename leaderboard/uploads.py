"""Reading an upload into candidate files, or refusing it with messages that name the file and the rule.

Accepted layouts (PKB's own, as is):
    1_allreduce_cuda.py, 13_gemm_allreduce_cuda.py, ...                 one attempt
    attempt_1/1_allreduce_cuda.py, attempt_2/1_allreduce_cuda.py, ...   one folder per attempt
either as separate files (a directory), or as one .zip / .tar / .tar.gz / .tgz archive; a single top folder wrapping
everything (``my_run/attempt_1/...``) is stripped. An optional ``submission.json`` holds metadata. Hidden files,
``__pycache__`` and non-Python files (README, logs) are ignored and listed as such.

Pure functions: no database, no Django models; the problem catalogue comes in as {stem: id}.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import json
import re
import tarfile
import zipfile

ATTEMPT_DIR = re.compile(r"^attempt_(\d+)$")
BACKEND = re.compile(r"^[a-z][a-z0-9]*$")
FILE_ID = re.compile(r"^(\d+)_")
METADATA_FILE = "submission.json"


@dataclasses.dataclass(frozen=True)
class UploadError:
    file: str
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.message} [{self.rule}]" if self.file else f"{self.message} [{self.rule}]"

    def as_dict(self) -> dict:
        return {"file": self.file, "rule": self.rule, "message": self.message}


class UploadRejected(Exception):
    def __init__(self, errors: list[UploadError]):
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors))


@dataclasses.dataclass
class CandidateFile:
    path: str
    problem_id: int
    stem: str
    backend: str
    attempt: int
    code: str
    sha256: str
    size: int


@dataclasses.dataclass
class ParsedUpload:
    files: list[CandidateFile]
    metadata: dict
    ignored: list[str]
    sha256: str

    @property
    def backends(self) -> set[str]:
        return {f.backend for f in self.files}

    @property
    def attempts_used(self) -> int:
        return max((f.attempt for f in self.files), default=0)


@dataclasses.dataclass(frozen=True)
class Limits:
    max_total_bytes: int
    max_file_bytes: int
    max_files: int


# --- reading the raw members ------------------------------------------------------------------------------------------

def is_archive(name: str) -> bool:
    lower = name.lower()
    return lower.endswith((".zip", ".tar", ".tar.gz", ".tgz"))


def members_from_archive(name: str, data: bytes, limits: Limits) -> list[tuple[str, bytes]]:
    """The (path, bytes) of every regular file in a zip or tar; refuses links, devices and escaping paths."""
    if len(data) > limits.max_total_bytes:
        raise UploadRejected([_too_big(name, len(data), limits.max_total_bytes)])
    lower = name.lower()
    try:
        if lower.endswith(".zip"):
            return _zip_members(name, data, limits)
        return _tar_members(name, data, limits)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as exc:
        raise UploadRejected([UploadError(name, "unreadable_archive", f"cannot read the archive: {exc}")]) from None


def _zip_members(name: str, data: bytes, limits: Limits) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        def read(info: zipfile.ZipInfo) -> bytes | UploadError:
            content = archive.read(info)
            if len(content) != info.file_size:  # a lying header (zip bomb); never trust declared sizes
                return UploadError(info.filename, "size_mismatch", "declared and actual sizes differ")
            return content

        return _checked_members(name, limits, ((info.filename, info.file_size, _zip_is_file(info),
                                                functools.partial(read, info))
                                               for info in archive.infolist() if not info.is_dir()))


def _zip_is_file(info: zipfile.ZipInfo) -> bool:
    """No Unix file type recorded, or a regular file's: links and special files are refused."""
    return ((info.external_attr >> 16) & 0o170000) in (0, 0o100000)


def _tar_members(name: str, data: bytes, limits: Limits) -> list[tuple[str, bytes]]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
        def read(info: tarfile.TarInfo) -> bytes:
            handle = archive.extractfile(info)
            return handle.read() if handle else b""

        return _checked_members(name, limits, ((info.name, info.size, info.isfile(), functools.partial(read, info))
                                               for info in archive if not info.isdir()))


def _checked_members(name: str, limits: Limits, members) -> list[tuple[str, bytes]]:
    """The (path, bytes) of an archive's members, given (path, declared size, is a regular file, read) for each one
    but its folders, in order; ``read()`` gives the bytes, or an UploadError. Every refusal is collected, except that
    passing the unpacked total stops at once, before reading more."""
    out, errors, total = [], [], 0
    for path, size, regular, read in members:
        if not regular:
            errors.append(UploadError(path, "not_a_regular_file", "links and special files are refused"))
            continue
        error = _path_error(path)
        if error:
            errors.append(error)
            continue
        total += size
        if size > limits.max_file_bytes:
            errors.append(_too_big(path, size, limits.max_file_bytes))
            continue
        if total > limits.max_total_bytes:
            raise UploadRejected(errors + [_too_big(name, total, limits.max_total_bytes, unpacked=True)])
        content = read()
        if isinstance(content, UploadError):
            errors.append(content)
            continue
        out.append((path, content))
    if errors:
        raise UploadRejected(errors)
    return out


def _path_error(path: str) -> UploadError | None:
    """Archive paths must stay inside the archive's folder: no absolute paths, no '..', no backslashes or drives."""
    if "\\" in path or path.startswith("/") or re.match(r"^[A-Za-z]:", path) or "\x00" in path:
        return UploadError(path, "path_escapes_folder", "absolute or non-POSIX path")
    parts = path.split("/")
    if ".." in parts:
        return UploadError(path, "path_escapes_folder", "the path leaves the archive's folder ('..')")
    return None


def _too_big(file: str, size: int, limit: int, unpacked: bool = False) -> UploadError:
    what = "unpacked upload" if unpacked else "file"
    return UploadError(file, "over_size", f"{what} is {size:,} bytes; the limit is {limit:,} bytes")


# --- interpreting the members ----------------------------------------------------------------------------------------

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

    metadata, ignored, files, seen_paths = {}, [], [], set()
    for path, data in members:
        if path in seen_paths:
            errors.append(UploadError(path, "duplicate", "the same path appears twice"))
            continue
        seen_paths.add(path)
        if path == METADATA_FILE:
            metadata = _read_metadata(path, data, errors)
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
    if not files and not errors:
        errors.append(UploadError("(upload)", "empty", "no candidate file ({stem}_{backend}.py) found"))
    if errors:
        raise UploadRejected(errors)
    digest = hashlib.sha256()
    for f in sorted(files, key=lambda f: f.path):
        digest.update(f.path.encode() + b"\0" + f.sha256.encode() + b"\n")
    return ParsedUpload(files=sorted(files, key=lambda f: (f.problem_id, f.attempt)), metadata=metadata,
                        ignored=sorted(ignored), sha256=digest.hexdigest())


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
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        errors.append(UploadError(path, "bad_metadata", f"not valid UTF-8 JSON: {exc}"))
        return {}
    if not isinstance(value, dict):
        errors.append(UploadError(path, "bad_metadata", "must be a JSON object"))
        return {}
    return value


def _candidate(path: str, data: bytes, stems: dict[str, int], limits: Limits,
               errors: list[UploadError]) -> CandidateFile | None:
    parts = path.split("/")
    if len(parts) == 1:
        attempt, name = 1, parts[0]
    elif len(parts) == 2 and ATTEMPT_DIR.match(parts[0]):
        attempt, name = int(ATTEMPT_DIR.match(parts[0]).group(1)), parts[1]
        if attempt < 1:
            errors.append(UploadError(path, "bad_layout", "attempt folders are numbered from attempt_1"))
            return None
    else:
        errors.append(UploadError(path, "bad_layout",
                                  "files go at the top level or in attempt_N/ folders ({stem}_{backend}.py)"))
        return None
    match = FILE_ID.match(name)
    stem_by_id = {v: k for k, v in stems.items()}
    stem = stem_by_id.get(int(match.group(1))) if match else None
    if stem is None or not name.startswith(stem + "_"):
        hint = f"; problem {match.group(1)} is {stem}, so expected {stem}_<backend>.py" if stem else ""
        errors.append(UploadError(path, "unknown_problem", f"not a known problem name{hint}"))
        return None
    backend = name[len(stem) + 1:-3]
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
    return CandidateFile(path=path, problem_id=stems[stem], stem=stem, backend=backend, attempt=attempt, code=code,
                         sha256=hashlib.sha256(data).hexdigest(), size=len(data))


def _check_layout(files: list[CandidateFile], errors: list[UploadError]) -> None:
    flat = [f for f in files if "/" not in f.path]
    nested = [f for f in files if "/" in f.path]
    if flat and nested:
        errors.append(UploadError(flat[0].path, "bad_layout",
                                  "mixes top-level files with attempt_N/ folders; put every file in a folder"))


def _check_duplicates(files: list[CandidateFile], errors: list[UploadError]) -> None:
    seen: dict[tuple[int, int], str] = {}
    for f in files:
        key = (f.problem_id, f.attempt)
        if key in seen:
            errors.append(UploadError(f.path, "duplicate",
                                      f"problem {f.stem} attempt {f.attempt} already given by {seen[key]}"))
        else:
            seen[key] = f.path


# --- metadata -------------------------------------------------------------------------------------------------------

PROTOCOLS = ("one_shot", "best_of_k", "agentic_feedback")
SELECTIONS = ("first", "last", "best_measured", "self_selected")
DEFAULT_SELECTION = {"one_shot": "first", "best_of_k": "best_measured", "agentic_feedback": "last"}
PROTOCOL_ALIASES = {"one-shot": "one_shot", "oneshot": "one_shot", "best-of-k": "best_of_k",
                    "agentic": "agentic_feedback", "agentic-feedback": "agentic_feedback"}


def clean_metadata(raw: dict, parsed: ParsedUpload, max_attempts: int, profiles: set[str]) -> dict:
    """Validated submission fields: explicit fields over submission.json; refuses missing or inconsistent ones."""
    merged = {**parsed.metadata, **{k: v for k, v in raw.items() if v not in (None, "")}}
    errors: list[UploadError] = []

    def need(key: str, label: str):
        value = merged.get(key)
        if value in (None, ""):
            errors.append(UploadError(METADATA_FILE, "missing_metadata", f"missing metadata: {label}"))
        return value

    model = need("model", "model")
    protocol = need("protocol", "protocol (one_shot, best_of_k or agentic_feedback)")
    attempts = need("attempts", "attempts (the budget k)")
    profile = need("profile", "profile")
    if errors:
        raise UploadRejected(errors)

    protocol = PROTOCOL_ALIASES.get(str(protocol).strip().lower(), str(protocol).strip().lower())
    if protocol not in PROTOCOLS:
        errors.append(UploadError(METADATA_FILE, "bad_metadata", f"protocol {protocol!r} is not one of {PROTOCOLS}"))
    k = _int(attempts, "attempts", errors, minimum=1)
    if k is not None and k > max_attempts:
        errors.append(UploadError(METADATA_FILE, "bad_metadata", f"attempts {k} exceeds the site's limit {max_attempts}"))
    if protocol == "one_shot" and k not in (None, 1):
        errors.append(UploadError(METADATA_FILE, "bad_metadata", "one_shot means attempts = 1"))
    if str(profile) not in profiles:
        errors.append(UploadError(METADATA_FILE, "unknown_profile",
                                  f"profile {profile!r} is not open; choose one of {sorted(profiles)}"))
    if k is not None:
        for f in parsed.files:
            if f.attempt > k:
                errors.append(UploadError(f.path, "over_budget", f"attempt {f.attempt} exceeds the budget k = {k}"))
    selection = str(merged.get("selection") or DEFAULT_SELECTION.get(protocol, "first"))
    if selection not in SELECTIONS:
        errors.append(UploadError(METADATA_FILE, "bad_metadata", f"selection {selection!r} is not one of {SELECTIONS}"))
    backend = _backend(merged.get("backend"), parsed, errors)
    tokens = _int(merged.get("tokens"), "tokens", errors, minimum=0) if merged.get("tokens") not in (None, "") else None
    dollars = _dollars(merged.get("dollars"), errors)
    if errors:
        raise UploadRejected(errors)
    return {
        "model_name": str(model)[:200], "protocol": protocol, "attempts_k": k, "profile": str(profile),
        "selection_rule": selection, "backend": backend,
        "agent": str(merged.get("agent") or "")[:200], "agent_version": str(merged.get("agent_version") or "")[:100],
        "label": str(merged.get("label") or "")[:200], "notes": str(merged.get("notes") or "")[:5000],
        "reported_tokens": tokens, "reported_dollars": dollars,
    }


def _int(value, label: str, errors: list[UploadError], minimum: int = 0) -> int | None:
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        errors.append(UploadError(METADATA_FILE, "bad_metadata", f"{label} must be an integer, not {value!r}"))
        return None
    if number < minimum:
        errors.append(UploadError(METADATA_FILE, "bad_metadata", f"{label} must be >= {minimum}"))
        return None
    return number


def _dollars(value, errors: list[UploadError]):
    if value in (None, ""):
        return None
    from decimal import Decimal, InvalidOperation

    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        errors.append(UploadError(METADATA_FILE, "bad_metadata", f"dollars must be a number, not {value!r}"))
        return None
    if amount < 0 or amount >= Decimal("1e10"):
        errors.append(UploadError(METADATA_FILE, "bad_metadata", "dollars must be between 0 and 1e10"))
        return None
    return amount.quantize(Decimal("0.01"))


def _backend(declared, parsed: ParsedUpload, errors: list[UploadError]) -> str:
    found = parsed.backends
    if declared in (None, ""):
        if len(found) > 1:
            errors.append(UploadError("(upload)", "mixed_backends",
                                      f"files use several backends {sorted(found)}; declare backend=mixed"))
            return ""
        return next(iter(found), "")
    declared = str(declared).strip().lower()
    if declared == "mixed":
        return declared
    for f in parsed.files:
        if f.backend != declared:
            errors.append(UploadError(f.path, "backend_mismatch", f"backend {f.backend!r} but the submission declares "
                                                                  f"{declared!r}"))
    return declared
