"""The command protocol between the judge and a group's rank processes, judge side: JSON commands go to each rank's
stdin, one JSON reply line comes back per rank on a private pipe. ``collect`` waits for every rank's reply and turns
an error reply, an early exit or a missed deadline into one ``GroupFailure``, naming the root cause rather than the
peers whose collectives broke because of it. The rank side of the protocol: evaluator/rank/worker.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import selectors
import signal
import subprocess
import time

# ``--problem`` (and ``--candidate``) of a warm spare's ranks (evaluator/process/warm.py, evaluator/rank/worker.py):
# start the process group, then wait for the job's first ``load``.
DEFERRED = "-"


class GroupFailure(Exception):
    """A command did not complete on every rank. ``kind`` is a verdict-like word; ``rank`` the first rank at fault."""

    def __init__(self, kind: str, message: str, rank: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.rank = rank
        self.message = message


class CandidateFault(Exception):
    """Something the candidate's group did (or left) that stopped the judge from acting on it: a group that would not
    freeze, die or be cleaned up, a reply it could not read. Raised by the code that acts on the candidate's group
    (evaluator/process/*), and turned into the candidate's verdict by evaluation.attribute (docs/threat-model.md,
    attribution): never an infra_error. ``verdict`` is runtime_error, timeout or policy_violation."""

    def __init__(self, message: str, verdict: str = "runtime_error"):
        super().__init__(message)
        self.message = message
        self.verdict = verdict


@dataclasses.dataclass
class Rank:
    """One rank process of a group and its end of the reply pipe. ``proc`` is a subprocess.Popen, or for a rank forked
    from the fork server a forkserver.ForkedProcess, held the same way (pid, stdin, poll, wait, returncode)."""

    rank: int
    proc: subprocess.Popen
    reply_fd: int
    buffer: bytearray = dataclasses.field(default_factory=bytearray)  # a reply line not yet complete
    overflowed: bool = False  # wrote a line over MAX_LINE_BYTES: the rest of its pipe is dropped unread
    stdout_path: str = ""
    stderr_path: str = ""
    initialized: bool = False  # past process-group init: the candidate's code may have run since


def collect(
    ranks: list[Rank], trusted: bool, timeout: float, expect_seq: int | None = None, grace: float = 3.0
) -> list[dict]:
    """Wait for one reply from each of ``ranks`` (``trusted``: a reference group's). Raises GroupFailure on an error
    reply, an early exit or the deadline.

    After the first failure the other ranks get a short grace period (they are usually blocked in a collective
    with the failed rank); the failure reported is the root cause: a rank that died without answering, or one
    that raised its own error, rather than the peers whose collectives broke because of it.
    """
    replies: dict[int, dict] = {}
    failures: list[GroupFailure] = []
    deadline = time.monotonic() + timeout
    selector = selectors.DefaultSelector()
    for r in ranks:
        selector.register(r.reply_fd, selectors.EVENT_READ, r)

    def fail(failure: GroupFailure) -> None:
        nonlocal deadline
        failures.append(failure)
        deadline = min(deadline, time.monotonic() + grace)

    try:
        while len(replies) < len(ranks):
            now = time.monotonic()
            if now >= deadline:
                if failures:
                    break
                missing = [r.rank for r in ranks if r.rank not in replies]
                if not trusted and not candidate_ran(ranks):
                    stuck = [r.rank for r in ranks if not r.initialized]
                    raise GroupFailure(
                        "infra_error",
                        f"ranks {stuck} did not finish process-group start-up "
                        f"within {timeout:.0f} s (before any candidate code ran)",
                        stuck[0],
                    )
                raise GroupFailure(
                    "timeout",
                    f"ranks {missing} did not answer within {timeout:.0f} s "
                    "(hang or distributed deadlock); the process group was killed",
                    missing[0],
                )
            for key, _ in selector.select(timeout=min(0.2, max(0.0, deadline - now))):
                r = key.data
                for reply in read(r):
                    _accept(r, reply, trusted, expect_seq, replies, fail, ranks)
            for r in ranks:
                if r.rank not in replies and r.proc.poll() is not None:
                    for reply in read(r):  # what it said before dying
                        _accept(r, reply, trusted, expect_seq, replies, fail, ranks)
                    if r.rank not in replies:
                        replies[r.rank] = {"ok": False}
                        # Dying before any rank of the group is past process-group init is the platform's problem:
                        # no candidate code ran yet; so is a forked rank that died with its fork server
                        # (evaluator/process/forkserver.py).
                        kind = "exited" if trusted or candidate_ran(ranks) else "infra_error"
                        message = _exit_message(r.rank, r.proc.returncode)
                        if getattr(r.proc, "server_lost", False):
                            kind, message = "infra_error", f"{message}: its fork server died"
                        fail(GroupFailure(kind, message, r.rank))
        if failures:
            raise _root_cause(failures)
        return [replies[r.rank] for r in ranks]
    finally:
        selector.close()


def candidate_ran(ranks: list[Rank]) -> bool:
    """Whether the candidate's code may have run in this group: once any rank is past process-group start-up. Its
    ranks share one uid and box, so from then on any rank of the group (one still starting up included) may have been
    stopped, killed or had its reply pipe written by the candidate's code in another (docs/threat-model.md)."""
    return any(r.initialized for r in ranks)


def _accept(r: Rank, reply: dict, trusted: bool, expect_seq, replies: dict, fail, ranks=()) -> None:
    if reply.get("event") == "initialized":  # process group up; the candidate's module is loaded next
        r.initialized = True
        return
    if expect_seq is not None and reply.get("seq") not in (None, expect_seq):
        fail(
            GroupFailure("protocol", f"rank {r.rank} answered out of turn (seq {_text(reply.get('seq'), 40)})", r.rank)
        )
        return
    if r.rank in replies:
        return
    replies[r.rank] = reply
    if not reply.get("ok"):
        kind = reply.get("kind", "runtime_error")
        if not isinstance(kind, str) or len(kind) > 40:
            kind = "protocol"
        if kind == "infra_error" and not trusted and (r.initialized or candidate_ran(ranks)):
            # Once the candidate's code has run in this process it can write any reply; a claim that the
            # platform failed is believed only before that (process-group init), never from the candidate.
            kind = "runtime_error"
        fail(GroupFailure(kind, _text(reply.get("error", "failed")), r.rank))


MESSAGE_CHARS = 8000  # of a rank's error text kept in a failure's message (a result's message is stored and shown)


def _text(value, limit: int = MESSAGE_CHARS) -> str:
    """A reply's field as a message: a string (whatever the rank sent), cut to ``limit`` characters."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} more characters]"


# Bounds on what the judge takes from a reply pipe (the candidate's code shares its rank's process and can write
# anything there). The largest honest reply is a timing block's samples, a few hundred KiB at most.
MAX_LINE_BYTES = 4 << 20
MAX_JSON_DEPTH = 32
# What one read() takes from one pipe before the caller looks at its deadline again: a writer that never pauses
# cannot keep the judge in one call.
READ_SLICE_BYTES = MAX_LINE_BYTES + 65536


def read(r: Rank) -> list[dict]:
    """The complete reply lines waiting on ``r``'s pipe, at most READ_SLICE_BYTES of them per call. A line longer than
    MAX_LINE_BYTES, nested deeper than MAX_JSON_DEPTH, or not JSON is a protocol failure of that rank (its reply's
    kind); what follows a too-long line is drained and dropped, so the judge's memory stays bounded whatever is
    written."""
    out = []
    taken = 0
    while taken < READ_SLICE_BYTES:
        try:
            chunk = os.read(r.reply_fd, 65536)
        except OSError:  # BlockingIOError included: nothing more now
            break
        if not chunk:
            break
        taken += len(chunk)
        if r.overflowed:
            continue
        r.buffer += chunk
        start = 0
        while True:
            end = r.buffer.find(b"\n", start)
            if end < 0:
                break
            out.append(parse(bytes(r.buffer[start:end])))
            start = end + 1
        del r.buffer[:start]
        if len(r.buffer) > MAX_LINE_BYTES:
            r.overflowed = True
            r.buffer = bytearray()
            out.append(
                {
                    "ok": False,
                    "kind": "protocol",
                    "error": f"rank {r.rank} wrote a reply line longer than {MAX_LINE_BYTES} bytes",
                }
            )
    return out


def parse(line: bytes) -> dict:
    """One reply line as a dict, or a protocol-failure reply saying why it is not one. Never raises."""
    if len(line) > MAX_LINE_BYTES:
        return {"ok": False, "kind": "protocol", "error": f"a reply line longer than {MAX_LINE_BYTES} bytes"}
    if _nesting(line) > MAX_JSON_DEPTH:
        return {"ok": False, "kind": "protocol", "error": f"a reply nested deeper than {MAX_JSON_DEPTH} levels"}
    try:
        value = json.loads(line)
    except (ValueError, RecursionError, MemoryError) as exc:  # UnicodeDecodeError is a ValueError
        return {"ok": False, "kind": "protocol", "error": f"unreadable reply ({type(exc).__name__}): {line[:200]!r}"}
    if not isinstance(value, dict):
        return {"ok": False, "kind": "protocol", "error": f"a reply that is not a JSON object: {line[:200]!r}"}
    return value


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def _nesting(line: bytes) -> int:
    """The deepest nesting of arrays and objects in a JSON line (strings skipped). Cheap for honest replies, which
    have a handful of brackets; a bounded Python scan otherwise (the line is at most MAX_LINE_BYTES)."""
    if line.count(b"[") + line.count(b"{") <= MAX_JSON_DEPTH:
        return 0
    depth = deepest = 0
    for byte in _STRING.sub(b"", line):
        if byte in (0x5B, 0x7B):  # [ {
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_JSON_DEPTH:
                break
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


# Text of errors that a rank raises only because a peer failed (its collective lost the other side).
_PEER_FAILURE_MARKERS = (
    "Connection closed by peer",
    "Connection reset",
    "remote worker",
    "Broken pipe",
    "communicator was aborted",
    "NCCL Error",
    "ncclRemoteError",
    "Socket Timeout",
    "Connection refused",
    "peer",
    "Timed out",
)


def _root_cause(failures: list[GroupFailure]) -> GroupFailure:
    def rank_order(f: GroupFailure) -> int:
        if f.kind in ("exited",):
            return 0
        if any(marker in f.message for marker in _PEER_FAILURE_MARKERS):
            return 2
        return 1

    best = sorted(failures, key=rank_order)[0]
    others = sorted({f.rank for f in failures if f is not best and f.rank is not None})
    if others:
        best.message += f"\n(ranks {others} failed afterwards, as their peers were gone)"
    return best


def _exit_message(rank: int, code: int | None) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        return f"rank {rank} was killed by {name} before answering"
    return f"rank {rank} exited early with status {code} before answering"
