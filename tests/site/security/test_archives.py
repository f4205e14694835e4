"""Hostile archives (issue 25): bombs are refused while inflating, with the inflated bytes bounded by the limits
whatever the headers say, for zip (stored, deflate, bzip2, lzma) and tar (plain, gzip, bzip2, xz)."""

from __future__ import annotations

import bz2
import io
import lzma
import tarfile
import tracemalloc
import zipfile

import pytest

from leaderboard.submissions import uploads
from tests.site.conftest import GOOD_1
from tests.site.security import bombs

# The site's defaults (leaderboard/settings.py).
LIMITS = uploads.Limits(max_total_bytes=16 << 20, max_file_bytes=512 << 10, max_files=87 * 16)
# Python allocations while refusing one bomb: the inflated output is Python bytes, so this bounds what the reader
# held; the upload itself is allocated before tracing starts.
PEAK_BYTES = 24 << 20


def refuse(name: str, data: bytes, limits: uploads.Limits = LIMITS) -> tuple[list[uploads.UploadError], int]:
    tracemalloc.start()
    try:
        with pytest.raises(uploads.UploadRejected) as caught:
            uploads.members_from_archive(name, data, limits)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return caught.value.errors, peak


def test_deflate_zip_with_lying_header_is_refused_while_inflating():
    data = bombs.deflate_bomb(members=1, megabytes=1024)
    assert len(data) < 1_100_000
    errors, peak = refuse("bomb.zip", data)
    assert [e.rule for e in errors] == ["over_size"]
    assert "while inflating" in errors[0].message
    assert peak < PEAK_BYTES, peak


def test_twelve_deflate_members_stop_at_the_archive_budget():
    errors, peak = refuse("bomb.zip", bombs.deflate_bomb(members=12, megabytes=1024))
    assert errors and all(e.rule == "over_size" for e in errors)
    assert len(errors) == 12
    assert peak < PEAK_BYTES, peak


def test_bzip2_zip_bomb_is_refused():
    data = bombs.bzip2_bomb(megabytes=16)
    assert len(data) < 2_500
    errors, peak = refuse("bomb.zip", data)
    assert [e.rule for e in errors] == ["over_size"]
    assert peak < PEAK_BYTES, peak


def test_tar_gz_bomb_is_refused_at_the_stream_budget():
    errors, peak = refuse("bomb.tar.gz", bombs.tar_gz_bomb(megabytes=1024))
    assert [e.rule for e in errors] == ["over_size"]
    assert peak < PEAK_BYTES, peak


def test_high_ratio_member_is_refused_even_under_the_size_limits():
    data = bombs.zip_raw([("1_allreduce_cuda.py", 8, bombs.deflate_zeros(1)[:1500], 0, 0)])
    limits = uploads.Limits(max_total_bytes=16 << 20, max_file_bytes=4 << 20, max_files=10)
    errors, _ = refuse("x.zip", data, limits)
    assert errors[0].rule == "compression_ratio"


def test_member_count_is_read_from_the_end_record_before_parsing():
    errors, _ = refuse("many.zip", bombs.many_members_zip(LIMITS.members + 1))
    assert [e.rule for e in errors] == ["too_many_files"]


def test_tar_member_count_is_limited():
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for i in range(40):
            archive.addfile(tarfile.TarInfo(f"n{i}.txt"), io.BytesIO(b""))
    limits = uploads.Limits(max_total_bytes=1 << 20, max_file_bytes=1 << 16, max_files=2, max_members=30)
    errors, _ = refuse("x.tar", buffer.getvalue(), limits)
    assert [e.rule for e in errors] == ["too_many_files"]


def _zip(method: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        archive.writestr("attempt_1/1_allreduce_cuda.py", GOOD_1)
        archive.writestr("README.md", b"notes " * 100)
    return buffer.getvalue()


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_every_zip_compression_reads_honest_archives(method):
    members = dict(uploads.members_from_archive("x.zip", _zip(method), LIMITS))
    assert members["attempt_1/1_allreduce_cuda.py"] == GOOD_1
    assert members["README.md"] == b"notes " * 100


@pytest.mark.parametrize(
    "mode,name", [("w", "x.tar"), ("w:gz", "x.tar.gz"), ("w:bz2", "x.tar.bz2"), ("w:xz", "x.tar.xz")]
)
def test_every_tar_compression_reads_honest_archives(mode, name):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        info = tarfile.TarInfo("attempt_1/1_allreduce_cuda.py")
        info.size = len(GOOD_1)
        archive.addfile(info, io.BytesIO(GOOD_1))
    assert uploads.members_from_archive(name, buffer.getvalue(), LIMITS) == [("attempt_1/1_allreduce_cuda.py", GOOD_1)]


@pytest.mark.parametrize("compress", [bz2.compress, lzma.compress], ids=["bz2", "xz"])
def test_compressed_tar_bombs_are_refused(compress):
    header = tarfile.TarInfo("1_allreduce_cuda.py")
    header.size = 8 << 20
    data = compress(header.tobuf(format=tarfile.GNU_FORMAT) + b"\0" * (8 << 20))
    # A budget (1 MiB of members, a few MiB of tar stream) well under the member's 8 MiB.
    errors, peak = refuse(
        "x.tar", data, uploads.Limits(max_total_bytes=1 << 20, max_file_bytes=512 << 10, max_files=10)
    )
    assert "while inflating" in errors[0].message
    assert [e.rule for e in errors] == ["over_size"]
    assert peak < PEAK_BYTES, peak


def test_lying_size_that_is_smaller_than_the_data_is_refused():
    raw = bombs.deflate_zeros(1)
    data = bombs.zip_raw([("1_allreduce_cuda.py", 8, raw[:4000], 100, 0)])
    limits = uploads.Limits(max_total_bytes=16 << 20, max_file_bytes=4 << 20, max_files=10, max_ratio=1e9)
    errors, _ = refuse("x.zip", data, limits)
    assert errors[0].rule == "size_mismatch"


def test_crc_is_checked():
    data = bytearray(_zip(zipfile.ZIP_STORED))
    at = bytes(data).index(b"import")
    data[at] ^= 1
    errors, _ = refuse("x.zip", bytes(data))
    assert errors[0].rule == "unreadable_archive"


def test_encrypted_and_unknown_methods_are_refused_clearly():
    data = bombs.zip_raw([("1_allreduce_cuda.py", 9, b"xx", 2, 0)])  # deflate64
    errors, _ = refuse("x.zip", data)
    assert errors[0].rule == "unsupported_archive" and "deflate" in errors[0].message


def test_huge_lzma_dictionary_is_refused():
    raw = b"\x09\x14\x05\x00" + bytes([93]) + (1 << 31).to_bytes(4, "little") + b"\0" * 16
    errors, _ = refuse("x.zip", bombs.zip_raw([("1_allreduce_cuda.py", 14, raw, 10, 0)]))
    assert errors[0].rule == "unreadable_archive" and "dictionary" in errors[0].message


def test_archives_inside_archives_are_never_opened():
    inner = bombs.deflate_bomb(members=1, megabytes=64)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("inner.zip", inner)
        archive.writestr("1_allreduce_cuda.py", GOOD_1)
    members = dict(uploads.members_from_archive("x.zip", buffer.getvalue(), LIMITS))
    assert members["inner.zip"] == inner  # kept as bytes, later ignored as a non-Python file
    parsed = uploads.parse(list(members.items()), {"1_allreduce": 1}, LIMITS)
    assert parsed.ignored == ["inner.zip"]


@pytest.mark.parametrize(
    "name",
    [
        "1_allreduce_cuda.py\n",
        "attempt_1\n/1_allreduce_cuda.py",
        "1_allreduce_\ncuda.py",
        "1_allreduce_cuda\r.py",
        "1_allreduce_cuda.py\x00",
        "1_allreduce_\u202ecuda.py",
        "a/" * 9 + "1_allreduce_cuda.py",
        "x" * 300 + ".py",
    ],
)
def test_file_names_with_control_characters_or_too_deep_are_refused(name):
    with pytest.raises(uploads.UploadRejected) as caught:
        uploads.parse([(name, GOOD_1)], {"1_allreduce": 1}, LIMITS)
    assert caught.value.errors[0].rule == "bad_file_name"


def test_backend_pattern_does_not_accept_a_trailing_newline():
    assert not uploads.BACKEND.match("cuda\n")
    assert not uploads.ATTEMPT_DIR.match("attempt_1\n")
    assert not uploads.ATTEMPT_DIR.match("attempt_\u0663")
