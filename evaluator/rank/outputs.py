"""Outputs between processes: the one walker every copy and check of an output goes through (``copy_plain``), and
output files: reading one safely, taking one out of its writer's reach, checking one.

A candidate's outputs reach the judge as files in the candidate's own ``out/`` directory, written by its ranks. The
reference's outputs never leave its ranks: each reference rank holds its output on its device and compares the
candidate's file with it there (``check_file``, run by the rank worker of role ``ref``, a trusted process). So no
reference output is ever written where a file could be read, the comparison runs on the device, on every rank at
once, and the judge process moves no tensor at all: moving large outputs through the judge process was most of a
large problem's overhead (docs/calibration.md, Throughput).
"""

from __future__ import annotations

import os
import stat
import time
import zipfile

import torch

from problems.tolerance import compare

# Room a file may take beyond twice its expected tensor bytes (a zip header per tensor, pickled structure): a larger
# one is refused unread, so a file cannot exhaust a trusted process's memory.
FILE_SLACK_BYTES = 4 << 20


def nbytes(value) -> int:
    """The tensor bytes in an output of tensors, tuples, lists and dicts."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (tuple, list)):
        return sum(nbytes(v) for v in value)
    if isinstance(value, dict):
        return sum(nbytes(v) for v in value.values())
    return 0


def size_limit(expected_bytes: int) -> int:
    return 2 * expected_bytes + FILE_SLACK_BYTES


def describe(value):
    """The structure of an output with shapes and dtypes instead of values, e.g. [[1024, 1024], "bfloat16"]."""
    if isinstance(value, torch.Tensor):
        return [list(value.shape), str(value.dtype).replace("torch.", "")]
    if isinstance(value, (tuple, list)):
        return [describe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): describe(v) for k, v in value.items()}
    return type(value).__name__


def _open_plain(path: str) -> int:
    """A read-only descriptor of ``path`` if it is a regular file and not a link. A candidate owns its directory: it
    could plant a link to a file only the judge may read, or a FIFO that blocks the reader forever."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise FileNotFoundError("no output file") from None
    except OSError as exc:
        raise ValueError(f"the output is not a plain file ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ValueError("the output is not a plain file")
    return fd


def load(path: str, max_bytes: int | None = None):
    """The output a candidate's rank wrote to ``path`` (plain CPU tensors and builtins, ``weights_only``), read from
    a regular file only and then deleted; refused unread beyond ``max_bytes``."""
    try:
        with os.fdopen(_open_plain(path), "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if max_bytes is not None and size > max_bytes:
                raise ValueError(
                    f"the output file has {size} bytes, more than the {max_bytes} an output of the "
                    "reference's size can take"
                )
            if max_bytes is not None:
                check_records(f, max_bytes)
            return torch.load(f, map_location="cpu", weights_only=True)
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


def check_records(f, max_bytes: int) -> None:
    """Refuse a file whose records could inflate past ``max_bytes`` in the process that loads it: torch's writer
    stores every record uncompressed, so a compressed record (a few KiB of DEFLATE can declare a GiB) is forged, and
    the records' declared sizes together may not exceed what an output of the reference's size takes. Read from the
    zip's central directory alone, before anything is inflated. ``f`` is left at its start."""
    try:
        with zipfile.ZipFile(f) as archive:
            records = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise ValueError(f"the output file is not a torch save file ({exc})") from None
    finally:
        f.seek(0)
    declared = 0
    for info in records:
        if info.compress_type != zipfile.ZIP_STORED:
            raise ValueError(
                f"the output file's record {info.filename[:100]!r} is compressed (method "
                f"{info.compress_type}); torch.save stores records uncompressed"
            )
        declared += max(info.file_size, info.compress_size)
    if declared > max_bytes:
        raise ValueError(
            f"the output file's records declare {declared} bytes, more than the {max_bytes} an output "
            "of the reference's size can take"
        )


def take(source: str, target: str, max_bytes: int | None = None) -> None:
    """Copy an untrusted file to ``target`` (a directory only the judge writes) and delete the original: a copy, not
    a rename, since a process that still holds the file open could change a renamed one later. The caller stops the
    writer's processes around it (no write can land mid-copy). In-kernel copy: no tensor is parsed here."""
    fd = _open_plain(source)
    try:
        size = os.fstat(fd).st_size
        if max_bytes is not None and size > max_bytes:
            raise ValueError(
                f"the output file has {size} bytes, more than the {max_bytes} an output of the "
                "reference's size can take"
            )
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            offset = 0
            while offset < size:
                sent = os.sendfile(out, fd, offset, size - offset)
                if sent == 0:
                    break  # the file shrank: what was there is what is judged
                offset += sent
        finally:
            os.close(out)
    finally:
        os.close(fd)
        try:
            os.unlink(source)
        except OSError:
            pass


def copy_plain(value, copy_tensor, path="output"):
    """``value`` rebuilt of plain tuples, lists, dicts and builtins, each tensor through ``copy_tensor``; anything else
    is refused by name (TypeError). The one walker behind every copy and check of an output, in the rank workers and
    in the reference's checks, so that they all accept the same things."""
    if isinstance(value, torch.Tensor):
        if type(value) is not torch.Tensor:
            raise TypeError(f"{path} is a {type(value).__name__}, not a plain torch.Tensor")
        return copy_tensor(value.detach())
    if isinstance(value, (tuple, list)):
        items = [copy_plain(v, copy_tensor, f"{path}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(value, dict):
        return {k: copy_plain(v, copy_tensor, f"{path}[{k!r}]") for k, v in value.items()}
    if value is None or type(value) in (int, float, bool, str):
        return value
    raise TypeError(f"{path} is a {type(value).__name__}; outputs must be tensors, tuples, lists, dicts or numbers")


def check_plain(value) -> None:
    """Raise TypeError unless ``value`` is made of plain tensors, tuples, lists, dicts and numbers (copies nothing)."""
    copy_plain(value, lambda tensor: None)


def portable(value):
    """An output as it leaves a rank's process: plain CPU tensors of its own (not views of the rank's buffers)."""
    return copy_plain(value, lambda t: t.to("cpu", copy=True).contiguous() if t.layout == torch.strided else t.cpu())


def snapshot(value):
    """A copy of a plain output on its own device (a timed call's kept output; moved to the host later by
    ``portable``)."""
    return copy_plain(value, torch.Tensor.clone)


def to_host(value):
    """Host copies, contiguous, for a problem's own ``compare`` (written for host tensors). A loaded file with
    anything but plain leaves (``weights_only`` also admits dtypes, devices, sizes) is refused like a rank's output."""
    return copy_plain(value, lambda t: t.cpu().contiguous())


def compare_rank(problem, expected, actual, rank: int, world_size: int) -> dict:
    """One rank's comparison record (``ok``, error sizes, where the first mismatch is). A problem's own ``compare``
    gets host copies (those functions were written for the judge's host tensors); the default check runs where the
    reference's output is, the device on a GPU."""
    if problem.compare is not None:
        message = problem.compare(to_host(expected), to_host(actual), world_size)
        return {"rank": rank, "ok": message is None, "message": message}
    slack = (lambda tensor: problem.slack(tensor, world_size)) if problem.slack else None
    strict = getattr(problem, "strict_dtype", None)  # the spec fixes the output dtype (docs/dtype.md)
    return dict(rank=rank, **compare(expected, actual, problem.atol, problem.rtol, slack, strict).to_dict())


def check_file(problem, expected, path: str, rank: int, world_size: int) -> dict:
    """Compare the output file a candidate rank wrote (untrusted) with ``expected``: the comparison record, with
    ``read_s`` and ``compare_s``. An unreadable, oversized or malformed file is a wrong output, never an error of the
    process that checks it."""
    began = time.monotonic()
    try:
        actual = load(path, max_bytes=size_limit(nbytes(expected)))
    except Exception as exc:  # noqa: BLE001 - a forged or unreadable output is a wrong output
        return {"rank": rank, "ok": False, "message": f"unreadable output: {exc}", "read_s": time.monotonic() - began}
    read = time.monotonic()
    try:
        entry = compare_rank(problem, expected, actual, rank, world_size)
    except Exception as exc:  # noqa: BLE001 - a structure no reference output has: the candidate's to answer for
        entry = {"rank": rank, "ok": False, "message": f"the output could not be compared: {type(exc).__name__}: {exc}"}
    entry.update(read_s=read - began, compare_s=time.monotonic() - read)
    return entry
