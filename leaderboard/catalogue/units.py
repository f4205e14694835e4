"""The unit of a hardware profile's device-seconds, by its device: GPU-seconds where each rank holds one GPU, else
rank-seconds (W x wall; a CPU profile has no GPU-seconds). The catalogue's, as the profiles are: the costs
(leaderboard/scoring/costs.py) and the feedback app's meters name their seconds with it."""

from __future__ import annotations

GPU_UNIT, RANK_UNIT = "GPU-seconds", "rank-seconds"
SHORT_UNIT = {GPU_UNIT: "GPU·s", RANK_UNIT: "rank·s"}


def unit(device: str) -> str:
    return GPU_UNIT if device == "cuda" else RANK_UNIT
