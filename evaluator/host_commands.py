"""``pkb sandbox-check``, ``pkb sweep`` and ``pkb host``: the commands a site's worker runs about its host rather than
a job (what a candidate sandbox here would be, what a killed judge left behind, which GPUs it serves). The parser and
the other commands: evaluator/cli.py.
"""

from __future__ import annotations

import json
import os
import sys

from evaluator.contract import requests as contract


def sandbox_check(args) -> int:
    """The host's sandbox support (evaluator/process/sandbox.py, host_support); the site's worker reads it through this
    command, as it reads a judgement through ``eval``, so the site imports nothing of the judge but its schema."""
    from evaluator.process import sandbox

    support = sandbox.host_support()
    print(json.dumps(support) if args.json else support["summary"])
    return 0


def sweep(args) -> int:
    """Kill what a judge killed before its own clean-up left under DIR (evaluator/process/processes.py,
    sweep_orphans), and clear the boxes that dead judges left (evaluator/process/boxes.py, sweep_free); unmount the
    dead judges' scratch under DIR, and with --remove remove DIR whatever its shape (evaluator/process/removal.py)."""
    from evaluator.process import boxes, processes, removal

    report = processes.sweep_orphans(args.directory)
    if os.geteuid() == 0:
        report["boxes_cleared"] = boxes.sweep_free()
        report["boxes_quarantined"] = sorted(boxes.quarantined())
        report["unmounted"] = removal.unmount_below(args.directory)
    if args.remove:
        report["left"] = removal.remove_tree(args.directory)["left"]
    print(
        json.dumps(report)
        if args.json
        else f"killed {report['killed_outliving']} processes, removed {report['removed_files']} files"
    )
    return 0


def host_record(args) -> int:
    """A GPU worker's host record for its device set, and whether it can serve a profile (evaluator/judge/hosts.py):
    exit 1 with the reason when it cannot."""
    from evaluator.judge import hosts

    try:
        devices = contract.device_set(args.gpus) if args.gpus else None
    except contract.BadDeviceSet as exc:
        print(f"pkb host: {exc}", file=sys.stderr)
        return 2
    host = hosts.record(devices)
    why = hosts.mismatch(host, args.ranks, args.gpu_model, args.nvlink, args.shared_device) if args.ranks else None
    host["refused"] = why
    print(json.dumps(host) if args.json else (why or f"serves: {len(host['gpus'])} GPUs ({host['visible']})"))
    return 1 if why else 0
