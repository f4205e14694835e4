"""Public seeds: the fixed, published trial seeds of feedback runs, and why they never mix with ranking seeds.

Every public seed has bit 62 set (``evaluator.contract.schema.PUBLIC_SEED_BIT``) and is derived from the problem id
alone, so anyone can recompute the list (``GET /api/v1/feedback/seeds/<problem>/``, ``pkb feedback seeds PROBLEM``) and
reproduce a feedback run locally with ``pkb eval ... --seeds a,b,c``. The seeds of leaderboard jobs are drawn by the
judge itself from the operating system's randomness (``random.SystemRandom().getrandbits(62)``): a secret, fresh per
job, and never with bit 62 set. The judge refuses explicit seeds without the bit, and the leaderboard's runner never
passes explicit seeds, so the two sets are disjoint by construction, not by luck.

The seeds above are those of the correctness trials (what a mismatch report names). Seeds the judge draws beyond them
(timed blocks, hidden checks) are its own business (evaluator/judge/evaluation.py); none of them is ever a published
one.
"""

from __future__ import annotations

import hashlib

from evaluator.contract.schema import PUBLIC_SEED_BIT

COUNT = 8  # per problem: up to 7 trials and the re-check after timing
NAMESPACE = "pkb-arena/feedback/public-seeds/v1"


def public_seed(problem_id: int, index: int) -> int:
    digest = hashlib.sha256(f"{NAMESPACE}/{int(problem_id)}/{int(index)}".encode()).digest()
    return PUBLIC_SEED_BIT | (int.from_bytes(digest[:8], "little") & (PUBLIC_SEED_BIT - 1))


def public_seeds(problem_id: int) -> list[int]:
    """The published list of one problem (always the same)."""
    return [public_seed(problem_id, i) for i in range(COUNT)]


def for_run(problem_id: int, trials: int) -> list[int]:
    """The seeds a run with ``trials`` trials uses: the first ``trials`` of the list, then its last (the re-check)."""
    seeds = public_seeds(problem_id)
    trials = max(1, min(trials, COUNT - 1))
    return seeds[:trials] + seeds[-1:]


def is_public(seed: int) -> bool:
    return PUBLIC_SEED_BIT <= seed < 2 * PUBLIC_SEED_BIT
