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
import bz2
import hashlib
import io
import json
import lzma
import re
import struct
import tarfile
import unicodedata
import zipfile
import zlib

from evaluator import schema

# \Z, not $: "$" also matches before a trailing newline. ASCII: \d would take any script's digits.
ATTEMPT_DIR = re.compile(r"^attempt_(\d+)\Z", re.ASCII)
BACKEND = re.compile(r"^[a-z][a-z0-9]*\Z")
FILE_ID = re.compile(r"^(\d+)_", re.ASCII)
METADATA_FILE = "submission.json"


@dataclasses.dataclass(frozen=True)
class UploadError:
    file: str
    rule: str
    message: str
    url: str = ""  # a page the message refers to (the earlier submission of a duplicate upload)

    def __str__(self) -> str:
        return f"{self.file}: {self.message} [{self.rule}]" if self.file else f"{self.message} [{self.rule}]"

    def as_dict(self) -> dict:
        out = {"file": self.file, "rule": self.rule, "message": self.message}
        if self.url:
            out["url"] = self.url
        return out


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
    max_total_bytes: int  # all members, inflated
    max_file_bytes: int  # one member, inflated
    max_files: int  # candidate files
    max_members: int | None = None  # archive entries of any kind (default: twice max_files, plus 64)
    max_ratio: float = 200.0  # inflated / compressed, for members inflating past RATIO_FLOOR

    @property
    def members(self) -> int:
        return self.max_members if self.max_members is not None else 2 * self.max_files + 64


# --- reading the raw members ------------------------------------------------------------------------------------------
#
# An archive is hostile input: its headers may lie about sizes and a few kilobytes may inflate to gigabytes. Every
# member is inflated here, by our own loop over zlib/bz2/lzma decompressors asked for at most a bounded number of
# output bytes per call, so the limits below are counted on the bytes actually produced, never on declared sizes, and
# the process holds at most the upload, the accepted members (<= max_total_bytes) and one member being inflated
# (<= max_file_bytes + one chunk). (zipfile's own reader inflates a whole bzip2/lzma input block per call, which is
# how a 2.4 KB zip reached gigabytes.) Archives inside archives are never opened: they are ignored like any
# non-Python file, so nesting is one level by construction.

CHUNK = 64 * 1024
RATIO_FLOOR = 64 * 1024  # members inflating to less than this are never refused for their ratio
TAR_BLOCK = 512
ZIP_STORED, ZIP_DEFLATED, ZIP_BZIP2, ZIP_LZMA = 0, 8, 12, 14
ZIP_METHODS = {ZIP_STORED: "stored", ZIP_DEFLATED: "deflate", ZIP_BZIP2: "bzip2", ZIP_LZMA: "lzma"}
LZMA_MAX_DICT = 64 * 1024 * 1024  # liblzma allocates the whole dictionary a raw stream asks for
XZ_MEMLIMIT = 128 * 1024 * 1024


def is_archive(name: str) -> bool:
    lower = name.lower()
    return lower.endswith((".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz"))


class _Refused(Exception):
    """One member broke a limit while inflating: the UploadError says which."""

    def __init__(self, error: UploadError):
        self.error = error


class _Budget:
    """Inflated bytes of the whole archive, refused or not: the work one upload can cause is bounded by it."""

    def __init__(self, name: str, limit: int):
        self.name, self.limit, self.used = name, limit, 0

    def spend(self, count: int) -> None:
        self.used += count
        if self.used > self.limit:
            raise UploadRejected([UploadError(self.name, "over_size",
                                              f"unpacked upload is over {self.limit:,} bytes (stopped while "
                                              f"inflating)")])


def members_from_archive(name: str, data: bytes, limits: Limits) -> list[tuple[str, bytes]]:
    """The (path, bytes) of every regular file in a zip or tar (plain, gzip, bzip2 or xz); refuses links, devices,
    escaping or control-character paths, and anything over the limits, counted while inflating."""
    if len(data) > limits.max_total_bytes:
        raise UploadRejected([_too_big(name, len(data), limits.max_total_bytes)])
    lower = name.lower()
    try:
        if lower.endswith(".zip"):
            return _zip_members(name, data, limits)
        return _tar_members(name, data, limits)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, lzma.LZMAError, zlib.error,
            struct.error, ValueError) as exc:
        raise UploadRejected([UploadError(name, "unreadable_archive", f"cannot read the archive: {exc}")]) from None


def _zip_members(name: str, data: bytes, limits: Limits) -> list[tuple[str, bytes]]:
    # The count comes from the end record before zipfile builds one ZipInfo per entry (a 16 MB central directory
    # holds 350,000 of them).
    end = zipfile._EndRecData(io.BytesIO(data))  # noqa: SLF001 - the stdlib's end-record reader, zip64 included
    if end is None:
        raise zipfile.BadZipFile("no end of central directory: not a zip file")
    if end[zipfile._ECD_ENTRIES_TOTAL] > limits.members:  # noqa: SLF001
        raise UploadRejected([_too_many(name, end[zipfile._ECD_ENTRIES_TOTAL], limits.members)])  # noqa: SLF001
    budget = _Budget(name, limits.max_total_bytes)
    view = memoryview(data)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = [info for info in archive.infolist() if not info.is_dir()]
        if len(infos) > limits.members:
            raise UploadRejected([_too_many(name, len(infos), limits.members)])

        def read(info: zipfile.ZipInfo) -> bytes:
            if info.flag_bits & 0x1:
                raise _Refused(UploadError(info.filename, "unsupported_archive", "encrypted members are refused"))
            if info.compress_type not in ZIP_METHODS:
                raise _Refused(UploadError(info.filename, "unsupported_archive",
                                           f"compression method {info.compress_type} is not supported; use one of "
                                           f"{', '.join(ZIP_METHODS.values())}"))
            raw = _zip_raw(view, info)
            content = _inflate(info.filename, _zip_chunks(raw, info.compress_type), len(raw), limits, budget)
            if len(content) != info.file_size:  # a lying header; never trust declared sizes
                raise _Refused(UploadError(info.filename, "size_mismatch", "declared and actual sizes differ"))
            if zlib.crc32(content) != info.CRC:
                raise _Refused(UploadError(info.filename, "unreadable_archive", "CRC check failed"))
            return content

        return _checked_members(name, limits, ((info.filename, info.file_size, _zip_is_file(info),
                                                functools.partial(read, info)) for info in infos))


def _zip_raw(view: memoryview, info: zipfile.ZipInfo) -> memoryview:
    """The compressed bytes of a member, located through its local header (as zipfile does)."""
    start = info.header_offset
    header = bytes(view[start:start + 30])
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local header for {info.filename!r}")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    begin = start + 30 + name_length + extra_length
    if begin + info.compress_size > len(view):
        raise zipfile.BadZipFile(f"{info.filename!r} runs past the end of the archive")
    return view[begin:begin + info.compress_size]


def _zip_chunks(raw: memoryview, method: int):
    """A decompressor for one member's raw bytes: yields (input consumed so far, inflated piece) with each piece at
    most ``want()`` bytes, the caller's remaining allowance (sent in)."""
    if method == ZIP_STORED:
        return _stored(raw)
    if method == ZIP_DEFLATED:
        return _zlib_stream(raw, lambda: zlib.decompressobj(-15), multi=False)
    if method == ZIP_BZIP2:
        return _bounded_stream(raw, bz2.BZ2Decompressor, multi=False)
    return _lzma_zip_stream(raw)


def _stored(raw: memoryview):
    allowance = yield
    position = 0
    while position < len(raw):
        piece = bytes(raw[position:position + min(CHUNK, allowance)])
        position += len(piece)
        allowance = yield position, piece


def _zlib_stream(raw, make, multi: bool):
    allowance = yield
    position, pending, inflater = 0, b"", make()
    while True:
        if not pending:
            if position >= len(raw):
                return
            pending = bytes(raw[position:position + CHUNK])
            position += len(pending)
        piece = inflater.decompress(pending, allowance)  # allowance >= 1: 0 would mean "unlimited"
        pending = inflater.unconsumed_tail
        if inflater.eof:
            pending = inflater.unused_data
            if not multi or not pending.strip(b"\0"):
                allowance = yield position - len(pending), piece
                return
            inflater = make()
        allowance = yield position - len(pending), piece


def _bounded_stream(raw, make, multi: bool):
    """bz2/lzma decompressors keep unconsumed input themselves; ``max_length`` bounds each call's output."""
    allowance = yield
    position, inflater = 0, make()
    while True:
        if inflater.eof:
            rest = inflater.unused_data
            if not multi or not rest.strip(b"\0"):
                return
            inflater = make()
            piece = inflater.decompress(rest, allowance)
        elif inflater.needs_input:
            if position >= len(raw):
                raise EOFError("compressed data ends before the end-of-stream marker")
            chunk = bytes(raw[position:position + CHUNK])
            position += len(chunk)
            piece = inflater.decompress(chunk, allowance)
        else:
            piece = inflater.decompress(b"", allowance)
        allowance = yield position, piece


def _lzma_zip_stream(raw: memoryview):
    """Zip's LZMA: a 4-byte header (version, properties size), the LZMA1 properties, then a raw stream."""
    header = bytes(raw[:4])
    if len(header) < 4:
        raise EOFError("truncated lzma header")
    size = struct.unpack("<H", header[2:4])[0]
    props = bytes(raw[4:4 + size])
    if size != 5 or len(props) != 5 or props[0] >= 9 * 5 * 5:
        raise zipfile.BadZipFile("bad lzma properties")
    dict_size = struct.unpack("<I", props[1:5])[0]
    if dict_size > LZMA_MAX_DICT:
        raise zipfile.BadZipFile(f"lzma dictionary of {dict_size:,} bytes is over {LZMA_MAX_DICT:,}")
    lc, rest = props[0] % 9, props[0] // 9
    filters = [{"id": lzma.FILTER_LZMA1, "dict_size": dict_size, "lc": lc, "lp": rest % 5, "pb": rest // 5}]
    return _bounded_stream(raw[4 + size:], lambda: lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=filters),
                           multi=False)


def _inflate(path: str, stream, compressed: int, limits: Limits, budget: _Budget) -> bytes:
    """Run a decompressor generator to the end, refusing the member once it passes max_file_bytes or the ratio."""
    out = bytearray()
    next(stream)
    allowance = limits.max_file_bytes + 1
    try:
        while True:
            consumed, piece = stream.send(allowance)
            budget.spend(len(piece))
            out += piece
            if len(out) > limits.max_file_bytes:
                raise _Refused(UploadError(path, "over_size", f"file is over {limits.max_file_bytes:,} bytes "
                                                              f"unpacked (stopped while inflating)"))
            if len(out) > RATIO_FLOOR and len(out) > limits.max_ratio * max(1, consumed):
                raise _Refused(UploadError(path, "compression_ratio",
                                           f"inflates more than {limits.max_ratio:g} times its compressed size"))
            allowance = limits.max_file_bytes + 1 - len(out)
    except StopIteration:
        pass
    finally:
        stream.close()
    return bytes(out)


def _zip_is_file(info: zipfile.ZipInfo) -> bool:
    """No Unix file type recorded, or a regular file's: links and special files are refused."""
    return ((info.external_attr >> 16) & 0o170000) in (0, 0o100000)


class _InflatingReader(io.RawIOBase):
    """A compressed tar as a readable stream of at most ``limit`` inflated bytes (counted as they are produced)."""

    def __init__(self, stream, budget: _Budget):
        self._stream, self._budget, self._buffer, self._done = stream, budget, b"", False
        next(self._stream)

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:
        while not self._buffer and not self._done:
            try:
                _, piece = self._stream.send(max(1, min(len(target), CHUNK)))
            except StopIteration:
                self._done = True
                break
            self._budget.spend(len(piece))
            self._buffer = piece
        count = min(len(target), len(self._buffer))
        target[:count] = self._buffer[:count]
        self._buffer = self._buffer[count:]
        return count


def _tar_stream(data: bytes):
    """The tar's inflating generator, chosen by the data's magic bytes (never by the file name)."""
    view = memoryview(data)
    if data[:2] == b"\x1f\x8b":
        return _zlib_stream(view, lambda: zlib.decompressobj(16 + zlib.MAX_WBITS), multi=True)
    if data[:3] == b"BZh":
        return _bounded_stream(view, bz2.BZ2Decompressor, multi=True)
    if data[:6] == b"\xfd7zXZ\x00":
        return _bounded_stream(view, lambda: lzma.LZMADecompressor(lzma.FORMAT_XZ, memlimit=XZ_MEMLIMIT),
                               multi=True)
    return _stored(view)


def _tar_members(name: str, data: bytes, limits: Limits) -> list[tuple[str, bytes]]:
    # Headers and padding take up to two blocks per member on top of the members' own bytes.
    budget = _Budget(name, limits.max_total_bytes + 2 * TAR_BLOCK * (limits.members + 2) + 2 * 10240)
    reader = io.BufferedReader(_InflatingReader(_tar_stream(data), budget), buffer_size=CHUNK)
    # Stream mode ("r|"): members are read once, in order, never seeking; skipped data is read through the budget.
    with tarfile.open(fileobj=reader, mode="r|") as archive:
        def members():
            count = 0
            for info in archive:
                if info.isdir():
                    continue
                count += 1
                if count > limits.members:
                    raise UploadRejected([_too_many(name, count, limits.members)])
                yield info.name, info.size, info.isfile(), functools.partial(read, info)

        def read(info: tarfile.TarInfo) -> bytes:
            handle = archive.extractfile(info)
            return handle.read(limits.max_file_bytes + 1) if handle else b""

        return _checked_members(name, limits, members())


def _checked_members(name: str, limits: Limits, members) -> list[tuple[str, bytes]]:
    """The (path, bytes) of an archive's members, given (path, declared size, is a regular file, read) for each one
    but its folders, in order; ``read()`` gives the bytes or raises _Refused. Every refusal is collected, except that
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
        if size > limits.max_file_bytes:
            errors.append(_too_big(path, size, limits.max_file_bytes))
            continue
        try:
            content = read()
        except _Refused as refused:
            errors.append(refused.error)
            continue
        if len(content) > limits.max_file_bytes:
            errors.append(_too_big(path, len(content), limits.max_file_bytes))
            continue
        total += len(content)
        if total > limits.max_total_bytes:
            raise UploadRejected(errors + [_too_big(name, total, limits.max_total_bytes, unpacked=True)])
        out.append((path, content))
    if errors:
        raise UploadRejected(errors)
    return out


MAX_PATH_LENGTH = 255
MAX_PATH_DEPTH = 8


def _path_error(path: str) -> UploadError | None:
    """Archive paths must stay inside the archive's folder (no absolute paths, '..', backslashes or drives) and be
    printable: a newline or another control or format character (bidi overrides) in a name is refused."""
    if any(unicodedata.category(c)[0] == "C" for c in path):
        return UploadError(path, "bad_file_name", "control or format characters (newline, NUL, bidi...) in the "
                                                  "file name")
    if "\\" in path or path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        return UploadError(path, "path_escapes_folder", "absolute or non-POSIX path")
    parts = path.split("/")
    if ".." in parts:
        return UploadError(path, "path_escapes_folder", "the path leaves the archive's folder ('..')")
    if len(path) > MAX_PATH_LENGTH or len(parts) > MAX_PATH_DEPTH:
        return UploadError(path, "bad_file_name", f"paths are at most {MAX_PATH_LENGTH} characters and "
                                                  f"{MAX_PATH_DEPTH} folders deep")
    return None


def _too_many(file: str, count: int, limit: int) -> UploadError:
    return UploadError(file, "too_many_files", f"the archive holds {count:,} entries or more; the limit is {limit:,}")


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
    unsupported = schema.unsupported_backend(path, code)
    if unsupported:  # it could only ever be a compile_error: refused now, naming the backend and the supported ones
        errors.append(UploadError(path, "unsupported_backend", unsupported))
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

# The submission protocols (docs/site.md): the one list that models' choices, filters, plots and the API read.
ONE_SHOT, BEST_OF_K, AGENTIC = "one_shot", "best_of_k", "agentic_feedback"
PROTOCOLS = (ONE_SHOT, BEST_OF_K, AGENTIC)
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
    text = {key: _text(merged.get(key), key, errors, multiline=key == "notes")
            for key in ("model", "agent", "agent_version", "label", "notes")}
    if errors:
        raise UploadRejected(errors)
    return {
        "model_name": text["model"][:200], "protocol": protocol, "attempts_k": k, "profile": str(profile),
        "selection_rule": selection, "backend": backend,
        "agent": text["agent"][:200], "agent_version": text["agent_version"][:100],
        "label": text["label"][:200], "notes": text["notes"][:5000],
        "reported_tokens": tokens, "reported_dollars": dollars,
    }


def _text(value, label: str, errors: list[UploadError], multiline: bool = False) -> str:
    """A metadata string without NUL or other control characters (PostgreSQL refuses NUL in text; the rest only
    hides things on pages); notes may hold newlines and tabs. Strings only: a JSON list or object is refused."""
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        errors.append(UploadError(METADATA_FILE, "bad_metadata", f"{label} must be a string"))
        return ""
    value = str(value)
    allowed = "\n\r\t" if multiline else ""
    if any(unicodedata.category(c) == "Cc" and c not in allowed for c in value):
        errors.append(UploadError(METADATA_FILE, "bad_metadata", f"{label} contains control characters"))
        return ""
    return value


MAX_INT = 2**53  # well inside PostgreSQL's bigint and exact in a JSON double


def _int(value, label: str, errors: list[UploadError], minimum: int = 0, maximum: int = MAX_INT) -> int | None:
    """ASCII digits only (int() also takes '٣' and ' 3 '), inside [minimum, maximum]; booleans are no integers."""
    text = str(value).strip() if not isinstance(value, (bool, float)) else ""
    if isinstance(value, float) and value.is_integer():
        text = str(int(value))
    if not re.fullmatch(r"[+-]?[0-9]{1,20}", text):
        errors.append(UploadError(METADATA_FILE, "bad_metadata", f"{label} must be an integer, not {value!r}"[:300]))
        return None
    number = int(text)
    if number < minimum or number > maximum:
        errors.append(UploadError(METADATA_FILE, "bad_metadata", f"{label} must be between {minimum} and {maximum}"))
        return None
    return number


def _dollars(value, errors: list[UploadError]):
    if value in (None, ""):
        return None
    from decimal import Decimal, InvalidOperation

    try:
        amount = Decimal(str(value).strip()[:40])
    except InvalidOperation:
        amount = None
    if amount is None or not amount.is_finite():  # NaN and Infinity parse, then fail every comparison
        errors.append(UploadError(METADATA_FILE, "bad_metadata", f"dollars must be a number, not {value!r}"[:300]))
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
