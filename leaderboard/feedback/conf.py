"""Feedback settings: each from the environment (parsed strictly, like leaderboard/settings.py), overridable in Django
settings under the same name (the tests do that).

| variable | default | meaning |
| --- | --- | --- |
| PKB_FEEDBACK_QUOTA_DAILY | 200 | feedback + profile runs per submitter in a rolling 24 hours |
| PKB_FEEDBACK_QUOTA_CONCURRENT | 4 | feedback + profile runs queued or running at once per submitter |
| PKB_FEEDBACK_TIMEOUT_SECONDS | 1800 | hard limit of one feedback judge run |
| PKB_FEEDBACK_MAX_ATTEMPTS | 3 | claims per run (platform failures are retried, then refunded) |
"""

from __future__ import annotations

from django.conf import settings

from leaderboard.env import env_int

DEFAULTS = {
    "PKB_FEEDBACK_QUOTA_DAILY": env_int("PKB_FEEDBACK_QUOTA_DAILY", 200, minimum=1),
    "PKB_FEEDBACK_QUOTA_CONCURRENT": env_int("PKB_FEEDBACK_QUOTA_CONCURRENT", 4, minimum=1),
    "PKB_FEEDBACK_TIMEOUT_SECONDS": env_int("PKB_FEEDBACK_TIMEOUT_SECONDS", 1800, minimum=10),
    "PKB_FEEDBACK_MAX_ATTEMPTS": env_int("PKB_FEEDBACK_MAX_ATTEMPTS", 3, minimum=1),
}


def get(name: str) -> int:
    return getattr(settings, name, DEFAULTS[name])
