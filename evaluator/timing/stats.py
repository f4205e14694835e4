"""Statistics for timings: medians and a bootstrap confidence interval for the speedup.

Samples arrive in blocks: reference block b and candidate block b were timed back to back (ABAB...), so slow drift of
the machine (clocks, thermals, neighbours) moves both. The bootstrap resamples block pairs, then iterations within
each chosen block, so the interval carries both the between-block and the within-block variation.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def speedup(reference: Sequence[float], candidate: Sequence[float]) -> float:
    return median(reference) / median(candidate)


def bootstrap_speedup_ci(
    ref_blocks: Sequence[Sequence[float]],
    cand_blocks: Sequence[Sequence[float]],
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile interval of median(ref)/median(cand) under a two-level (block, then sample) bootstrap."""
    if len(ref_blocks) != len(cand_blocks) or not ref_blocks:
        raise ValueError("need the same positive number of reference and candidate blocks")
    rng = random.Random(seed)
    pairs = list(zip(ref_blocks, cand_blocks, strict=True))
    ratios = []
    for _ in range(resamples):
        ref_sample: list[float] = []
        cand_sample: list[float] = []
        for _ in pairs:
            ref_block, cand_block = pairs[rng.randrange(len(pairs))]
            ref_sample.extend(rng.choices(ref_block, k=len(ref_block)))
            cand_sample.extend(rng.choices(cand_block, k=len(cand_block)))
        ratios.append(statistics.median(ref_sample) / statistics.median(cand_sample))
    ratios.sort()
    tail = (1.0 - confidence) / 2.0
    low = ratios[int(tail * (resamples - 1))]
    high = ratios[int((1.0 - tail) * (resamples - 1))]
    return low, high
