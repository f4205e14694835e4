"""Reading an archive's raw members with bounded inflation: sizes, ratios and counts are checked while reading,
so a bomb is refused before it is unpacked."""

from __future__ import annotations

import bz2
import functools
import io
import lzma
import re
import struct
import tarfile
import unicodedata
import zipfile
import zlib

from leaderboard.submissions.uploads.types import Limits, UploadError, UploadRejected

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
            raise UploadRejected(
                [
                    UploadError(
                        self.name,
                        "over_size",
                        f"unpacked upload is over {self.limit:,} bytes (stopped while inflating)",
                    )
                ]
            )


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
    except (
        zipfile.BadZipFile,
        tarfile.TarError,
        EOFError,
        OSError,
        lzma.LZMAError,
        zlib.error,
        struct.error,
        ValueError,
    ) as exc:
        raise UploadRejected([UploadError(name, "unreadable_archive", f"cannot read the archive: {exc}")]) from None


def _zip_members(name: str, data: bytes, limits: Limits) -> list[tuple[str, bytes]]:
    # The count comes from the end record before zipfile builds one ZipInfo per entry (a 16 MB central directory
    # holds 350,000 of them).
    end = zipfile._EndRecData(io.BytesIO(data))
    if end is None:
        raise zipfile.BadZipFile("no end of central directory: not a zip file")
    if end[zipfile._ECD_ENTRIES_TOTAL] > limits.members:
        raise UploadRejected([_too_many(name, end[zipfile._ECD_ENTRIES_TOTAL], limits.members)])
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
                raise _Refused(
                    UploadError(
                        info.filename,
                        "unsupported_archive",
                        f"compression method {info.compress_type} is not supported; use one of "
                        f"{', '.join(ZIP_METHODS.values())}",
                    )
                )
            raw = _zip_raw(view, info)
            content = _inflate(info.filename, _zip_chunks(raw, info.compress_type), len(raw), limits, budget)
            if len(content) != info.file_size:  # a lying header; never trust declared sizes
                raise _Refused(UploadError(info.filename, "size_mismatch", "declared and actual sizes differ"))
            if zlib.crc32(content) != info.CRC:
                raise _Refused(UploadError(info.filename, "unreadable_archive", "CRC check failed"))
            return content

        return _checked_members(
            name,
            limits,
            ((info.filename, info.file_size, _zip_is_file(info), functools.partial(read, info)) for info in infos),
        )


def _zip_raw(view: memoryview, info: zipfile.ZipInfo) -> memoryview:
    """The compressed bytes of a member, located through its local header (as zipfile does)."""
    start = info.header_offset
    header = bytes(view[start : start + 30])
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local header for {info.filename!r}")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    begin = start + 30 + name_length + extra_length
    if begin + info.compress_size > len(view):
        raise zipfile.BadZipFile(f"{info.filename!r} runs past the end of the archive")
    return view[begin : begin + info.compress_size]


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
        piece = bytes(raw[position : position + min(CHUNK, allowance)])
        position += len(piece)
        allowance = yield position, piece


def _zlib_stream(raw, make, multi: bool):
    allowance = yield
    position, pending, inflater = 0, b"", make()
    while True:
        if not pending:
            if position >= len(raw):
                return
            pending = bytes(raw[position : position + CHUNK])
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
            chunk = bytes(raw[position : position + CHUNK])
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
    props = bytes(raw[4 : 4 + size])
    if size != 5 or len(props) != 5 or props[0] >= 9 * 5 * 5:
        raise zipfile.BadZipFile("bad lzma properties")
    dict_size = struct.unpack("<I", props[1:5])[0]
    if dict_size > LZMA_MAX_DICT:
        raise zipfile.BadZipFile(f"lzma dictionary of {dict_size:,} bytes is over {LZMA_MAX_DICT:,}")
    lc, rest = props[0] % 9, props[0] // 9
    filters = [{"id": lzma.FILTER_LZMA1, "dict_size": dict_size, "lc": lc, "lp": rest % 5, "pb": rest // 5}]
    return _bounded_stream(
        raw[4 + size :], lambda: lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=filters), multi=False
    )


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
                raise _Refused(
                    UploadError(
                        path,
                        "over_size",
                        f"file is over {limits.max_file_bytes:,} bytes unpacked (stopped while inflating)",
                    )
                )
            if len(out) > RATIO_FLOOR and len(out) > limits.max_ratio * max(1, consumed):
                raise _Refused(
                    UploadError(
                        path, "compression_ratio", f"inflates more than {limits.max_ratio:g} times its compressed size"
                    )
                )
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
        return _bounded_stream(view, lambda: lzma.LZMADecompressor(lzma.FORMAT_XZ, memlimit=XZ_MEMLIMIT), multi=True)
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
        return UploadError(
            path, "bad_file_name", "control or format characters (newline, NUL, bidi...) in the file name"
        )
    if "\\" in path or path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        return UploadError(path, "path_escapes_folder", "absolute or non-POSIX path")
    parts = path.split("/")
    if ".." in parts:
        return UploadError(path, "path_escapes_folder", "the path leaves the archive's folder ('..')")
    if len(path) > MAX_PATH_LENGTH or len(parts) > MAX_PATH_DEPTH:
        return UploadError(
            path, "bad_file_name", f"paths are at most {MAX_PATH_LENGTH} characters and {MAX_PATH_DEPTH} folders deep"
        )
    return None


def _too_many(file: str, count: int, limit: int) -> UploadError:
    return UploadError(file, "too_many_files", f"the archive holds {count:,} entries or more; the limit is {limit:,}")


def _too_big(file: str, size: int, limit: int, unpacked: bool = False) -> UploadError:
    what = "unpacked upload" if unpacked else "file"
    return UploadError(file, "over_size", f"{what} is {size:,} bytes; the limit is {limit:,} bytes")
