"""What the submissions app announces, for the apps above it to follow (docs/architecture.md, the apps' order:
submissions never imports them). Sent synchronously, inside the sender's transaction: a receiver's failure fails the
sender's write. leaderboard/scoring/apps.py connects them:

- ``scores_stale(submission, problem_ids)``: candidates or jobs of these problems (None: all) came or went: their
  scores and the submission's leaderboard row are recomputed;
- ``listing_changed(submission)``: its visibility changed: its scores' listed flag, the problem statistics of its
  profile and protocol, and its row follow;
- ``entry_stale(submission)``: a field its leaderboard row shows changed (flagged, a staff edit): the row follows.
"""

from django.dispatch import Signal

scores_stale = Signal()
listing_changed = Signal()
entry_stale = Signal()
