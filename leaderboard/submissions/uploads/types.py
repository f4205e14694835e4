"""The upload parser's values: what it returns, what it refuses with, and the limits it enforces."""

from __future__ import annotations

import dataclasses


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
    transcripts: list = dataclasses.field(default_factory=list)  # uploads/transcripts.py TranscriptFile

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
