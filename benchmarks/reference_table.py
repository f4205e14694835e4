"""The reference-time table of docs/calibration.md from the JSON of one or more ``judge_gpu.py overhead`` runs.

    python3 benchmarks/reference_table.py RUN1/overhead.json RUN2/overhead.json ...

A later file's row for a problem replaces an earlier one's unless the later one is not correct and the earlier one is.
Prints a two-column Markdown table (id, problem, reference ms, A/A speedup and interval: **F** marks a false
"faster", *m* an interval that misses 1.0), then the totals the RESULTS text quotes.
"""

from __future__ import annotations

import json
import statistics
import sys


def merge(paths: list[str]) -> dict[int, dict]:
    rows: dict[int, dict] = {}
    for path in paths:
        with open(path) as f:
            for row in json.load(f)["rows"]:
                old = rows.get(row["id"])
                if old is None or row["verdict"] == "correct" or old["verdict"] != "correct":
                    rows[row["id"]] = row
    return rows


def cell(row: dict) -> str:
    name = row["stem"].split("_", 1)[1]
    if row["verdict"] != "correct":
        return f"| {row['id']} | {name} | {row['verdict']} | |"
    mark = " **F**" if row["faster"] else ("" if row["contains_1"] else " *m*")
    low, high = row["ci"]
    ref_ms = row.get("reference_ms", row.get("ref_ms"))  # run 3's files (docs/calibration.md) name it ref_ms
    return f"| {row['id']} | {name} | {ref_ms:.4g} | {row['speedup']:.3f} [{low:.3f}, {high:.3f}]{mark} |"


def main(paths: list[str]) -> int:
    rows = merge(paths)
    ids = sorted(rows)
    half = (len(ids) + 1) // 2
    print("| id | problem | reference (ms) | A/A speedup [interval] " * 2 + "|")
    print("|---" * 8 + "|")
    for k in range(half):
        right = cell(rows[ids[k + half]]) if k + half < len(ids) else "| | | | |"
        print(cell(rows[ids[k]]) + right[1:])
    overhead = [r["overhead_s"] for r in rows.values()]
    print(
        f"\n{len(rows)} problems, {sum(r['verdict'] == 'correct' for r in rows.values())} correct; total wall "
        f"{sum(r['wall_s'] for r in rows.values()):.0f} s; overhead median {statistics.median(overhead):.2f} s, "
        f"max {max(overhead):.2f} s; A/A false faster {sorted(i for i, r in rows.items() if r['faster'])}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
