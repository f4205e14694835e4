"""Path converters: a path segment that is not a well-formed id or problem key never reaches a view (404 from the
resolver), so no view parses one by hand. Ids are ASCII digits of at most 18 (inside PostgreSQL's bigint);
Django's <int:> takes any length, and '²' passes str.isdigit() but not int()."""

from __future__ import annotations


class IdConverter:
    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value) -> str:
        return str(int(value))


class ProblemKeyConverter:
    """A problem's number (13) or its PKB stem (13_gemm_allreduce): ASCII letters, digits and underscores."""

    regex = "[0-9]{1,4}(?:_[A-Za-z0-9_]{1,80})?"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value) -> str:
        return str(value)
