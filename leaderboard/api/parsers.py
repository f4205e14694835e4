"""DRF's JSON parser, but JSON nested deeper than Python's recursion limit is a 400 like any other bad JSON (json
raises RecursionError, which DRF does not catch)."""

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser as DrfJSONParser


class JSONParser(DrfJSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deep") from None
