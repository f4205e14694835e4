"""The trusted judge, in the judge's own process: evaluates one candidate for one problem and returns the result
document (evaluator/contract/schema.py).

evaluation.py: ``evaluate`` (one job: attempts and retries, more timing pairs, the hidden checks); attempt.py:
one attempt (its two groups started or taken warm, judged, closed; whose fault a failure is); config.py: the
request (``Config``, ``BadRequest``); pair.py: one reference + candidate pair of process groups (``Pair``: trials,
checks, the re-check); schedule.py: the pair's timing blocks; replies.py: what the ranks reply, checked before use;
policy.py: the static checks of a candidate's source; selfcheck.py: ``pkb selfcheck`` (references and null
candidates through the judge).
"""

from evaluator.judge.config import BadRequest, Config
from evaluator.judge.evaluation import evaluate
from evaluator.judge.pair import Pair

__all__ = ["BadRequest", "Config", "Pair", "evaluate"]
