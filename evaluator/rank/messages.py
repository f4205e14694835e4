"""What a candidate's failure says to its author: the root cause first, in the author's own terms.

A rank that fails reports one message (``describe``) and one kind (``kind_of``). The message leads with the exception's
type and message, then the candidate's innermost frame (its file name relative to the upload, the line and its
source); for a build that failed, the compiler's first error line and the tail of its log. The judge's own frames and
the server's absolute paths are left out: they say nothing to the author and something about the host. The full
traceback still goes to the rank's stderr (the owner's log).

A build failure (an extension that does not compile or link, a Triton kernel that does not compile) and a candidate
module that cannot be imported are ``compile_error``; any other exception is ``runtime_error``.
"""

from __future__ import annotations

import os
import re
import subprocess
import traceback
from collections.abc import Iterator
from typing import cast

COMPILE_ERROR = "compile_error"
RUNTIME_ERROR = "runtime_error"

MESSAGE_CHARS = 2000  # of the exception's own message
LOG_TAIL_LINES = 20
LOG_TAIL_CHARS = 3000
_COMPILERS = ("ninja", "nvcc", "c++", "g++", "gcc", "cc", "clang", "clang++", "ld", "ptxas")


class BuildError(RuntimeError):
    """An extension that did not build: ``log`` is what the build printed (compiler and linker output)."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception, then what it was raised from (or while handling), bounded and cycle-safe."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen and len(seen) < 16:
        seen.add(id(link))
        yield link
        link = link.__cause__ or (None if link.__suppress_context__ else link.__context__)


def _is_compiler_call(exc: subprocess.CalledProcessError) -> bool:
    cmd = exc.cmd if isinstance(exc.cmd, (list, tuple)) else str(exc.cmd).split()
    return bool(cmd) and os.path.basename(str(cmd[0])) in _COMPILERS


def build_failure(exc: BaseException) -> BaseException | None:
    """The exception in ``exc``'s chain that says a build failed, or None."""
    for e in _chain(exc):
        if isinstance(e, BuildError):
            return e
        if isinstance(e, subprocess.CalledProcessError) and _is_compiler_call(e):
            return e
        # torch.utils.cpp_extension raises this (from ninja's CalledProcessError) with the build's output appended.
        if isinstance(e, RuntimeError) and str(e).startswith("Error building extension"):
            return e
        if type(e).__name__ == "CompilationError" and type(e).__module__.startswith("triton"):
            return e
    return None


def kind_of(exc: BaseException, loading: bool = False) -> str:
    """``compile_error`` for a failure to import the candidate's module (``loading``), a build that failed, or a
    module the candidate imports that is not there; ``runtime_error`` for anything else."""
    if loading or build_failure(exc) is not None:
        return COMPILE_ERROR
    if any(isinstance(e, ImportError) for e in _chain(exc)):
        return COMPILE_ERROR
    return RUNTIME_ERROR


# An absolute path (not a URL): the directories go, the file name stays.
_ABSOLUTE = re.compile(r"(?<![\w.:/~-])/(?:[^\s/:'\"()\[\],;<>]+/)+(?=[^\s/:'\"()\[\],;<>])")


def scrub(text: str, candidate: str | None = None) -> str:
    """``text`` without the server's absolute paths: the upload's directory goes from paths into it, any other
    absolute path keeps only its last component."""
    if candidate:
        root = os.path.dirname(os.path.abspath(candidate)) + os.sep
        text = text.replace(root, "")
    return _ABSOLUTE.sub("", text)


def _is_candidate_file(filename: str, candidate: str | None) -> bool:
    if not candidate or not filename:
        return False
    return os.path.dirname(os.path.abspath(filename)) == os.path.dirname(os.path.abspath(candidate))


def candidate_frame(exc: BaseException, candidate: str | None) -> traceback.FrameSummary | None:
    """The innermost frame in the candidate's own file(s), looking through the chain if the exception itself was
    raised outside it."""
    for e in _chain(exc):
        frames = [f for f in traceback.extract_tb(e.__traceback__) if _is_candidate_file(f.filename, candidate)]
        if frames:
            return frames[-1]
    return None


def _frame_line(frame: traceback.FrameSummary, candidate: str | None) -> str:
    # Only candidate_frame() finds a frame, and only when candidate is set (_is_candidate_file).
    name = os.path.relpath(os.path.abspath(frame.filename), os.path.dirname(os.path.abspath(cast(str, candidate))))
    where = f"  at {name}, line {frame.lineno}, in {frame.name}"
    return where + (f": {frame.line.strip()}" if frame.line else "")


def first_error_line(log: str) -> str | None:
    """The compiler's first error: the first line saying ``error:`` (gcc, nvcc, ptxas, ld), else ``error``, else
    ninja's ``FAILED:``."""
    lines = log.splitlines()
    for pattern in (
        re.compile(r"\berror\b\s*:", re.IGNORECASE),
        re.compile(r"\berror\b", re.IGNORECASE),
        re.compile(r"^FAILED:"),
    ):
        for line in lines:
            if pattern.search(line):
                return line.strip()
    return None


def _build_log(e: BaseException) -> tuple[str, str]:
    """(headline, log) of a build failure."""
    if isinstance(e, BuildError):
        return str(e), e.log
    if isinstance(e, subprocess.CalledProcessError):
        out = e.output or b""
        err = e.stderr or b""
        text = "\n".join(x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x) for x in (out, err) if x)
        return str(e), text
    text = str(e)
    head, _, rest = text.partition("\n")
    if isinstance(e, RuntimeError) and head.startswith("Error building extension"):
        # "Error building extension 'name': <ninja's output>" on one first line, then the rest of the output.
        name, sep, first = head.partition(": ")
        return name, (first + "\n" + rest) if sep else rest
    return head, rest or text


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} more characters]"


def tail(log: str, lines: int = LOG_TAIL_LINES, chars: int = LOG_TAIL_CHARS) -> str:
    kept = [line for line in log.rstrip().splitlines() if line.strip()][-lines:]
    text = "\n".join(kept)
    return text[-chars:]


def describe(exc: BaseException, candidate: str | None = None) -> str:
    """The message a user sees for ``exc`` raised by the candidate at ``candidate`` (its path on this host)."""
    if isinstance(exc, SyntaxError) and exc.filename and _is_candidate_file(exc.filename, candidate):
        name = os.path.basename(exc.filename)
        text = f": {exc.text.strip()}" if exc.text else ""
        return f"SyntaxError: {exc.msg}\n  at {name}, line {exc.lineno}{text}"
    build = build_failure(exc)
    frame = candidate_frame(exc, candidate)
    if build is not None:
        headline, log = _build_log(build)
        log = scrub(log, candidate)
        lines = [f"{type(exc).__name__}: {_clip(scrub(headline, candidate), MESSAGE_CHARS)}"]
        first = first_error_line(log)
        if first:
            lines.append(f"  first error: {_clip(first, 500)}")
        if frame is not None:
            lines.append(_frame_line(frame, candidate))
        if log.strip():
            lines.append(f"  build log (last {LOG_TAIL_LINES} lines):")
            lines.extend("    " + line for line in tail(log).splitlines())
        return "\n".join(lines)
    message = _clip(scrub(str(exc), candidate), MESSAGE_CHARS)
    lines = [f"{type(exc).__name__}: {message}" if message else type(exc).__name__]
    if frame is not None:
        lines.append(_frame_line(frame, candidate))
    return "\n".join(lines)
