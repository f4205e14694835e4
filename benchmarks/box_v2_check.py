"""The box's device view on a GPU host (benchmarks/box_v2_check.sh runs it): a box made for a judge pinned to one GPU
(CUDA_VISIBLE_DEVICES=INDEX, CUDA_DEVICE_ORDER=PCI_BUS_ID, as leaderboard/jobs/gpus.py pins a worker) runs torch inside
its view, and the view must hold that GPU's node alone, CUDA must see exactly that GPU (by UUID) and run on it, and a
candidate's own CUDA_VISIBLE_DEVICES must reach no other GPU. Prints one JSON document; exits 1 when a check fails.

    python benchmarks/box_v2_check.py INDEX
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

INSIDE = r"""
import glob, json, os, sys
if os.environ.get("PKB_TRY_DEVICES"):  # what a candidate may do before CUDA starts: rewrite its device set
    os.environ["CUDA_VISIBLE_DEVICES"] = os.environ["PKB_TRY_DEVICES"]
import torch
found = {"nodes": sorted(glob.glob("/dev/nvidia[0-9]*")), "env": os.environ.get("CUDA_VISIBLE_DEVICES"),
         "count": torch.cuda.device_count()}
if found["count"]:
    found["uuid"] = str(torch.cuda.get_device_properties(0).uuid)
    x = torch.ones(256, 256, device="cuda")
    found["sum"] = float((x @ x).sum())
print(json.dumps(found), flush=True)
"""


def smi_uuids() -> list[str]:
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"], capture_output=True, text=True, check=True
    ).stdout
    return [line.split(",")[1].strip() for line in out.strip().splitlines()]


def main() -> int:
    index = sys.argv[1] if len(sys.argv) > 1 else "0"
    os.environ.update(CUDA_VISIBLE_DEVICES=index, CUDA_DEVICE_ORDER="PCI_BUS_ID")
    from evaluator.process import devices
    from tests.redteam.box_harness import live_box

    report = {"index": index, "selected": devices.for_this_judge(), "uuids": smi_uuids(), "runs": {}}
    expected_uuid = report["uuids"][int(index)]
    for name, candidate_env in (
        ("as given", {}),
        ("candidate asks for every GPU", {"PKB_TRY_DEVICES": ",".join(map(str, range(8)))}),
    ):
        with live_box() as (box, start):
            proc = start(INSIDE, python_args=(), **candidate_env)
            out, err = proc.communicate(timeout=240)
        try:
            report["runs"][name] = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            report["runs"][name] = {"error": (err or out)[-2000:]}
    given = report["runs"]["as given"]
    widened = report["runs"]["candidate asks for every GPU"]
    checks = {
        "one node": len(given.get("nodes", [])) == 1,
        "one GPU seen": given.get("count") == 1,
        "that GPU": expected_uuid.endswith(given.get("uuid", "?")) or given.get("uuid", "?") in expected_uuid,
        "ran": given.get("sum") == 256.0 * 256 * 256,
        "no other GPU when asked": widened.get("count", 0) <= 1 and len(widened.get("nodes", [])) <= 1,
    }
    report["checks"] = checks
    print(json.dumps(report, indent=1))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
