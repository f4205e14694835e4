"""Hostile archives for the upload tests and benchmarks/upload_bombs.py: zips whose headers lie about sizes and whose
members inflate to far more than any limit. Built without ever holding the inflated bytes."""

from __future__ import annotations

import bz2
import io
import struct
import tarfile
import zlib

ZEROS = b"\0" * (1 << 20)


def deflate_zeros(megabytes: int) -> bytes:
    """A raw deflate stream of ``megabytes`` MiB of zeros. A full flush resets the compressor, so after one 1 MiB
    piece every further MiB compresses to the same bytes: repeat them instead of compressing again."""
    first = zlib.compressobj(9, zlib.DEFLATED, -15)
    piece = first.compress(ZEROS) + first.flush(zlib.Z_FULL_FLUSH)
    again = first.compress(ZEROS) + first.flush(zlib.Z_FULL_FLUSH)
    end = first.flush(zlib.Z_FINISH)
    return piece + again * (megabytes - 1) + end


def bzip2_zeros(megabytes: int) -> bytes:
    compressor = bz2.BZ2Compressor(9)
    parts = [compressor.compress(ZEROS) for _ in range(megabytes)]
    return b"".join(parts) + compressor.flush()


def zip_raw(members: list[tuple[str, int, bytes, int, int]]) -> bytes:
    """A zip from (name, method, raw compressed bytes, declared size, declared CRC) without checking anything:
    the sizes and CRC in both headers are whatever the caller says."""
    out, central = io.BytesIO(), []
    for name, method, raw, size, crc in members:
        encoded = name.encode()
        offset = out.tell()
        version = 46 if method == 12 else 20
        out.write(
            struct.pack(
                "<4sHHHHHIIIHH", b"PK\x03\x04", version, 0, method, 0, 0x21, crc, len(raw), size, len(encoded), 0
            )
        )
        out.write(encoded)
        out.write(raw)
        central.append(
            struct.pack(
                "<4sHHHHHHIIIHHHHHII",
                b"PK\x01\x02",
                0x0314,
                version,
                0,
                method,
                0,
                0x21,
                crc,
                len(raw),
                size,
                len(encoded),
                0,
                0,
                0,
                0,
                0o100644 << 16,
                offset,
            )
            + encoded
        )
    start = out.tell()
    for entry in central:
        out.write(entry)
    size = out.tell() - start
    out.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(central), len(central), size, start, 0))
    return out.getvalue()


def deflate_bomb(members: int = 1, megabytes: int = 1024) -> bytes:
    """``members`` members of ~1 MB deflate each (1 GiB of zeros inflated) whose headers claim 1,000 bytes."""
    raw = deflate_zeros(megabytes)
    return zip_raw([(f"attempt_{i + 1}/1_allreduce_cuda.py", 8, raw, 1000, 0) for i in range(members)])


def bzip2_bomb(megabytes: int = 256) -> bytes:
    """One bzip2 member of ``megabytes`` MiB of zeros (a few hundred bytes compressed), claiming 1,000 bytes."""
    return zip_raw([("1_allreduce_cuda.py", 12, bzip2_zeros(megabytes), 1000, 0)])


def tar_gz_bomb(megabytes: int = 1024) -> bytes:
    """A .tar.gz whose one member is ``megabytes`` MiB of zeros: the tar header is honest, the gzip is ~1000:1."""
    header = tarfile.TarInfo("1_allreduce_cuda.py")
    header.size = megabytes << 20
    block = header.tobuf(format=tarfile.GNU_FORMAT)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + 15)
    body = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    piece = compressor.compress(ZEROS) + compressor.flush(zlib.Z_FULL_FLUSH)
    body += piece + (compressor.compress(ZEROS) + compressor.flush(zlib.Z_FULL_FLUSH)) * (megabytes - 1)
    return body + compressor.compress(b"\0" * 1024) + compressor.flush()


def many_members_zip(count: int) -> bytes:
    return zip_raw([(f"f{i}.txt", 0, b"", 0, 0) for i in range(count)])
