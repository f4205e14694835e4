"""The seeds a candidate must not know ahead (each timing block's, the hidden shape's and its trial's) come from the OS
in every mode (evaluator/judge/pair.py, Pair._secret_seed): never derived from the trial seeds, which are public in
feedback runs and given on the command line with ``--seed``."""

from evaluator import judge
from evaluator.contract import schema
from evaluator.judge import pair as pair_module
from evaluator.judge.schedule import Schedule
from problems.base import derive_seed
from tests.redteam.harness import CANDIDATES

SEEDS = [schema.PUBLIC_SEED_BIT | n for n in (11, 22, 33)]  # as a feedback run publishes them


def _draws(**config):
    cfg = judge.Config(world_size=2, **config)
    p = pair_module.Pair.__new__(pair_module.Pair)
    p.cfg = cfg
    return [p._secret_seed(SEEDS, "timing-block", b) for b in range(4)] + [p._secret_seed(SEEDS, "hidden-shape")]


def test_secret_seeds_differ_between_runs_with_the_same_public_seeds():
    for config in ({"seed": 5}, {"seed": 5, "seeds": SEEDS}, {}):
        first, second = _draws(**config), _draws(**config)
        assert first != second, config
        derived = [derive_seed(SEEDS[-1], "timing-block", b) & ((1 << 62) - 1) for b in range(4)]
        assert not set(first[:4]) & set(derived), config  # not the old derivation from the post-timing seed


def test_a_feedback_run_with_public_seeds_times_on_seeds_it_could_not_compute(monkeypatch):
    """End to end through the judge, as a feedback run calls it (public seeds given): the timing blocks' seeds of two
    runs with identical seeds differ, and none is any seed the candidate was given or can derive from them."""
    seen = []
    original = Schedule.__init__

    def record(self, pair, seeds, *args, **kwargs):
        original(self, pair, seeds, *args, **kwargs)
        seen.append(list(self.block_seeds))

    monkeypatch.setattr(Schedule, "__init__", record)
    for _ in range(2):
        result = judge.evaluate(
            1,
            str(CANDIDATES / "honest_allreduce.py"),
            2,
            "cpu",
            M=64,
            N=32,
            trials=2,
            seeds=SEEDS,
            seed=7,
            timing=True,
            timing_budget_ms=100,
            timeout_s=60,
        )
        assert result["verdict"] == schema.CORRECT, result["message"]
    assert len(seen) == 2 and seen[0] != seen[1]
    assert not (set(seen[0]) | set(seen[1])) & set(SEEDS)
