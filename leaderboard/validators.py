"""Checks every edge of the site shares (pages' forms, the API's serializers, the query-string form): ids, one-line
text, directory paths, integers in ASCII digits."""

from __future__ import annotations

import json
import re
import unicodedata

from django import forms
from django.core.exceptions import BadRequest, ValidationError

MAX_ID = 10**18 - 1  # what leaderboard.catalogue.converters.IdConverter takes; inside PostgreSQL's bigint


def no_control_characters(value: str) -> None:
    """One-line text: no NUL, newline or other control character (CharField already refuses NUL alone)."""
    if any(unicodedata.category(c) == "Cc" for c in str(value)):
        raise ValidationError("control characters (newline, tab, NUL...) are not allowed here", code="control")


def check_paths(value: str) -> None:
    """The 'paths' field of a directory upload: a JSON list of strings (the page's script fills it). Checked here
    because json.loads raises RecursionError, not ValueError, on deep nesting."""
    if value in (None, ""):
        return
    try:
        paths = json.loads(value)
    except (ValueError, RecursionError):
        raise ValidationError("must be a JSON list of relative paths", code="paths") from None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise ValidationError("must be a JSON list of relative paths", code="paths")


class AsciiIntegerField(forms.IntegerField):
    """An integer written in ASCII digits: Django's IntegerField hands the text to int(), which also takes other
    scripts' digits ('٣') and surrounding spaces; '1e20' and '²' are refused either way."""

    def to_python(self, value):
        if value in self.empty_values:
            return None
        if not re.fullmatch(r"[+-]?[0-9]{1,19}", str(value).strip()):
            raise ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(str(value).strip())


class BadQuery(BadRequest):
    """A query parameter that does not validate: 400 with the form's messages (pages/views.py bad_request for pages,
    leaderboard.api.errors for the API)."""

    def __init__(self, errors: dict[str, list[str]]):
        self.errors = errors
        super().__init__("; ".join(f"{field}: {' '.join(messages)}" for field, messages in errors.items()))
