"""Reading an upload into candidate files, or refusing it with messages that name the file and the rule.

Accepted layouts (PKB's own, as is):
    1_allreduce_cuda.py, 13_gemm_allreduce_cuda.py, ...                 one attempt
    attempt_1/1_allreduce_cuda.py, attempt_2/1_allreduce_cuda.py, ...   one folder per attempt
either as separate files (a directory), or as one .zip / .tar / .tar.gz / .tgz archive; a single top folder wrapping
everything (``my_run/attempt_1/...``) is stripped. An optional ``submission.json`` holds metadata. Hidden files,
``__pycache__`` and non-Python files (README, logs) are ignored and listed as such.

Pure functions: no database, no Django models; the problem catalogue comes in as {stem: id}. The parts:
types.py (what comes out, what is refused, the limits), archives.py (bounded reading of an archive's members),
layout.py (members -> candidate files), metadata.py (submission.json and form fields; the one protocol list).
"""

from leaderboard.submissions.uploads.archives import is_archive, members_from_archive
from leaderboard.submissions.uploads.layout import ATTEMPT_DIR, BACKEND, METADATA_FILE, parse
from leaderboard.submissions.uploads.metadata import AGENTIC, BEST_OF_K, ONE_SHOT, PROTOCOLS, SELECTIONS, clean_metadata
from leaderboard.submissions.uploads.types import CandidateFile, Limits, ParsedUpload, UploadError, UploadRejected

__all__ = [
    "AGENTIC",
    "ATTEMPT_DIR",
    "BACKEND",
    "BEST_OF_K",
    "METADATA_FILE",
    "ONE_SHOT",
    "PROTOCOLS",
    "SELECTIONS",
    "CandidateFile",
    "Limits",
    "ParsedUpload",
    "UploadError",
    "UploadRejected",
    "clean_metadata",
    "is_archive",
    "members_from_archive",
    "parse",
]
