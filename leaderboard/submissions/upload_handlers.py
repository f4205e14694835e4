"""Uploads at the HTTP edge: a cap on request bodies before Django reads them (multipart files otherwise stream to
temporary files without any limit; DATA_UPLOAD_MAX_MEMORY_SIZE counts only the non-file fields; first in
FILE_UPLOAD_HANDLERS), and the request's files turned into the plain (path, bytes) the services take."""

from __future__ import annotations

import json

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.files.uploadhandler import FileUploadHandler

from leaderboard.submissions import uploads


def body_limit() -> int:
    """The upload limit plus room for the metadata fields and the multipart framing."""
    return settings.PKB_MAX_UPLOAD_BYTES + 1024 * 1024


class BoundedUploadHandler(FileUploadHandler):
    """Refuses a body whose declared length is over the limit before reading it, and counts the file bytes
    actually received (a chunked body declares no length)."""

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        self.received = 0
        if content_length and content_length > body_limit():
            raise RequestDataTooBig(f"request body is {content_length:,} bytes; the limit is {body_limit():,}")
        return None

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > body_limit():
            raise RequestDataTooBig(f"uploaded files are over {body_limit():,} bytes")
        return raw_data

    def file_complete(self, file_size):
        return None


def upload_size_check(uploaded) -> None:
    """Refuse before reading: the sizes of uploaded files are known from the request."""
    limit = settings.PKB_MAX_UPLOAD_BYTES
    total = sum(f.size for f in uploaded)
    if total > limit:
        raise uploads.UploadRejected(
            [uploads.UploadError("(upload)", "over_size", f"upload is {total:,} bytes; the limit is {limit:,} bytes")]
        )


def request_files(files, form) -> list[tuple[str, bytes]]:
    """(path, bytes) from a submission request: an archive (``files["archive"]``), or a directory's files
    (``files.getlist("files")``) with their relative paths (``form["paths"]``, a JSON list filled by the page's JS;
    the file names when it is missing or does not match). ``files``/``form``: the request's FILES and form data. The
    views convert here, so services.submission_create takes plain (path, bytes) values."""
    uploaded = []
    archive = files.get("archive")
    chosen = files.getlist("files")
    upload_size_check(([archive] if archive else []) + chosen)
    if archive:
        uploaded.append((archive.name, archive.read()))
    try:
        paths = json.loads(form.get("paths") or "[]")
    except ValueError:
        paths = []
    if not isinstance(paths, list) or len(paths) != len(chosen):
        paths = [f.name for f in chosen]
    uploaded.extend((str(path), f.read()) for path, f in zip(paths, chosen, strict=False))
    return uploaded
