"""A cap on request bodies before Django reads them: multipart files otherwise stream to temporary files without
any limit (DATA_UPLOAD_MAX_MEMORY_SIZE counts only the non-file fields). First in FILE_UPLOAD_HANDLERS."""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.files.uploadhandler import FileUploadHandler


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
