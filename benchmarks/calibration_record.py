"""The compact calibration record (benchmarks/calibration/run<N>.json) that the re-judging scripts read.

Each GPU run's raw files (JSON documents of ``judge_gpu.py``, logs, machine notes) were kept in benchmarks/runs/
until issue 27; the record keeps, per raw file, its sha256 and size, and for each JSON document the fields that
aa_rules.py, probe_rules.py and crosscheck_rules.py read (found by running them over every file with access-tracking
dictionaries; their output on the record equals their output on the raw files). The raw files are in git history:
``git log --diff-filter=D -- benchmarks/runs``, and the sha256 says whether a restored file is the one recorded.

An argument names a record and, after a colon, a glob of the raw file names in it:

    benchmarks/calibration/run8.json:call*_sensitivity.json      the sensitivity documents of GPU run 8
    benchmarks/calibration/run9.json                            every JSON document of GPU run 9

or a raw JSON document's path (a file ``judge_gpu.py --out`` just wrote).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterator
from pathlib import Path


def documents(args: list[str]) -> Iterator[tuple[str, dict]]:
    """(name, document) for each argument, in order; name is the raw file's path as the runs' notes cite it."""
    for arg in args:
        record, _, pattern = arg.partition(":")
        if Path(record).parent.name != "calibration":
            yield arg, json.loads(Path(arg).read_text())
            continue
        doc = json.loads(Path(record).read_text())
        for name in sorted(doc["files"]):
            entry = doc["files"][name]
            if "record" in entry and fnmatch.fnmatchcase(name, pattern or "*.json"):
                yield f"benchmarks/runs/{doc['run']}/{name}", entry["record"]
