"""plotly.js as a static file: the copy inside the plotly Python package (the version its figures are written for),
found under ``vendor/plotly.min.js`` so that collectstatic hashes and compresses it with the site's own files and
WhiteNoise serves it with a far-future cache header. Only that one file of the package is exposed."""

from __future__ import annotations

from pathlib import Path

from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

NAME = "vendor/plotly.min.js"


def _directory() -> Path:
    import plotly

    return Path(plotly.__file__).resolve().parent / "package_data"


class PlotlyFinder(BaseFinder):
    def check(self, **kwargs):
        return []

    def find(self, path, find_all=False, **kwargs):
        if path != NAME:
            return [] if find_all else None
        found = str(_directory() / "plotly.min.js")
        return [found] if find_all else found

    def list(self, ignore_patterns):
        storage = FileSystemStorage(location=str(_directory()))
        storage.prefix = "vendor"  # collectstatic puts the file at prefix/path
        yield "plotly.min.js", storage
