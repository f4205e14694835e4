import random

import pytest

from evaluator.timing import stats


def _blocks(rng, level, blocks=6, per_block=40, drift=0.02, noise=0.05):
    out = []
    for _ in range(blocks):
        shift = 1.0 + rng.gauss(0, drift)
        out.append([level * shift * rng.lognormvariate(0, noise) for _ in range(per_block)])
    return out


def test_bootstrap_interval_covers_the_true_ratio_most_of_the_time():
    rng = random.Random(1)
    truth = 1.25
    covered = 0
    runs = 60
    for i in range(runs):
        ref = _blocks(rng, 1.0 * truth)
        cand = _blocks(rng, 1.0)
        low, high = stats.bootstrap_speedup_ci(ref, cand, resamples=400, seed=i)
        covered += low <= truth <= high
    assert covered / runs >= 0.85


def test_identical_distributions_are_not_called_faster():
    rng = random.Random(2)
    false_faster = 0
    for i in range(40):
        low, _ = stats.bootstrap_speedup_ci(_blocks(rng, 1.0), _blocks(rng, 1.0), resamples=400, seed=i)
        false_faster += low > 1.0
    assert false_faster <= 4  # at most ~the 2.5% tail, with room for sampling noise


def test_a_clear_speedup_is_detected():
    rng = random.Random(3)
    low, high = stats.bootstrap_speedup_ci(_blocks(rng, 1.3), _blocks(rng, 1.0), resamples=400)
    assert low > 1.0 and high > low


def test_blocks_must_pair():
    with pytest.raises(ValueError):
        stats.bootstrap_speedup_ci([[1.0]], [[1.0], [1.0]])
