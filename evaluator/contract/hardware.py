"""The hardware the ranked profiles run on, as numbers: the peak rates of one NVIDIA H200 SXM and its links. Part of
the judge's torch-free contract (evaluator/contract/schema.py's closure): the judge's speed-of-light floor
(evaluator/timing/physics.py), the feedback text (evaluator/contract/feedback_text.py) and the site's run page
(leaderboard/feedback/report.py) all read them here, so no text states rates the floor did not use. Standard library
only, installed with the client alone (client/pyproject.toml)."""

from __future__ import annotations

from typing import Any

# NVLink 4 is 18 links x 25 GB/s = 450 GB/s per direction; dense bf16 tensor cores about 790 TFLOP/s (989 with
# sparsity, which no problem here uses); HBM3e about 4.8 TB/s on the sheet, 4.3 TB/s the measured copy rate.
H200_CEILINGS: dict[str, Any] = {
    "name": "H200",
    "link_bytes_per_s": 450e9,
    "flops_per_s": 790e12,
    "hbm_bytes_per_s": 4.3e12,
}
