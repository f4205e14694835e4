"""The apps' order (docs/architecture.md): a lower app announces what changed and the app above follows. Each signal
of the lower apps has exactly one receiver, scoring's, connected at start-up (leaderboard/scoring/apps.py); the
behaviour behind them is tested where the scores, rows and costs are (tests/site/services/test_scores.py,
tests/site/test_costs.py)."""

import weakref

import pytest

from leaderboard.feedback.signals import feedback_changed
from leaderboard.jobs.signals import results_changed
from leaderboard.scoring import services as scoring_services
from leaderboard.submissions.signals import entry_stale, listing_changed, scores_stale


@pytest.mark.parametrize(
    "signal, receiver",
    [
        (results_changed, "on_results_changed"),
        (scores_stale, "on_scores_stale"),
        (listing_changed, "on_listing_changed"),
        (entry_stale, "on_entry_stale"),
        (feedback_changed, "on_feedback_changed"),
    ],
)
def test_scoring_follows_what_the_lower_apps_announce(signal, receiver):
    connected = [entry[1] for entry in signal.receivers]
    resolved = [ref() if isinstance(ref, weakref.ReferenceType) else ref for ref in connected]
    assert resolved == [getattr(scoring_services, receiver)]
